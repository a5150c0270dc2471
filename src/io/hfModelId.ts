/**
 * Shell: `--model gpt2` or `--model meta-llama/Llama-3.1-8B` as a Hugging Face model id. The planner needs only
 * the model's config.json; when a local copy exists in the Hugging Face cache (what `from_pretrained` or
 * `huggingface-cli download` left there) it is used, and otherwise the error says exactly which file to fetch
 * and where it would go. gpuwise downloads nothing itself.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { InputError } from './inputError.js';

/** `org/name` or a bare `name`, as the Hub spells ids. */
const MODEL_ID = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)?$/;

/** The hub cache folder, as huggingface_hub picks it: HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME or ~/.cache. */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HUGGINGFACE_HUB_CACHE) return env.HUGGINGFACE_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'huggingface', 'hub');
}

/**
 * The path to read for `--model ARG`: ARG itself when it exists; for a model id, the cached snapshot's config.json
 * (the one `refs/main` names, else the newest). Throws InputError when ARG is neither.
 */
export function resolveModelArg(arg: string, env: NodeJS.ProcessEnv = process.env): string {
  if (existsSync(arg) || !MODEL_ID.test(arg) || arg.endsWith('.json')) return arg;
  const cache = hubCacheDir(env);
  const repo = join(cache, `models--${arg.replace('/', '--')}`);
  const found = cachedConfig(repo);
  if (found !== null) return found;
  throw new InputError(
    arg,
    `no such file, and no copy of the Hugging Face model '${arg}' in ${cache}: fetch its config.json (huggingface-cli download ${arg} config.json, which puts it there; gated models need \`huggingface-cli login\` first), or save https://huggingface.co/${arg}/resolve/main/config.json and pass --model path/to/config.json`,
  );
}

function cachedConfig(repo: string): string | null {
  const snapshots = join(repo, 'snapshots');
  let main: string | null = null;
  try {
    main = readFileSync(join(repo, 'refs', 'main'), 'utf8').trim();
  } catch {
    // no refs/main: any snapshot holding a config.json will do
  }
  if (main && existsSync(join(snapshots, main, 'config.json'))) return join(snapshots, main, 'config.json');
  let names: string[];
  try {
    names = readdirSync(snapshots);
  } catch {
    return null;
  }
  const withConfig = names.map((n) => join(snapshots, n, 'config.json')).filter((p) => existsSync(p));
  withConfig.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return withConfig[0] ?? null;
}
