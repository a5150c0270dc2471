/**
 * Shell: where `--model ARG` comes from. In order: ARG as a path (a config.json, its folder, a gpuwise-model/1
 * summary); ARG as a Hugging Face model id with a copy in the Hugging Face cache (what `from_pretrained` or
 * `huggingface-cli download` left there; for a model gpuwise ships, its hub ids are looked up too, so `gpt2` finds
 * `openai-community/gpt2`); then the config shipped with gpuwise (planner/knownModels.ts). Otherwise the error names
 * the shipped models the name is close to, and, for an id with an organisation, the file to fetch and where it goes.
 * gpuwise downloads nothing itself.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { findKnownModel, knownModelNames } from '../planner/knownModels.js';
import { closeMatches } from '../util/closeMatches.js';
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

/** Where a model's description comes from, as the report names it. */
export type ModelSource =
  | { kind: 'file'; path: string }
  | { kind: 'hf-cache'; path: string; hubId: string; reading: string | null }
  | { kind: 'shipped'; hubId: string; config: Readonly<Record<string, unknown>>; reading: string | null };

/**
 * Where to read `--model ARG` from (see the module comment). `reading` is set when ARG is a short name that fits more
 * than one model (`llama-7b`): what else it could mean. Throws InputError when ARG is none of these.
 */
export function resolveModelArg(arg: string, env: NodeJS.ProcessEnv = process.env): ModelSource {
  if (existsSync(arg) || !MODEL_ID.test(arg) || arg.endsWith('.json')) return { kind: 'file', path: arg };
  const cache = hubCacheDir(env);
  const known = findKnownModel(arg);
  const reading = known?.reading ?? null;
  const ids = [arg, ...(known ? [known.model.hubId, ...known.model.hubAliases] : [])];
  for (const id of new Set(ids)) {
    const found = cachedConfig(join(cache, `models--${id.replace('/', '--')}`));
    if (found !== null) return { kind: 'hf-cache', path: found, hubId: id, reading: id === arg ? null : reading };
  }
  if (known) return { kind: 'shipped', hubId: known.model.hubId, config: known.model.config, reading };
  // Suggest only ids that exist: the hub ids of the shipped models whose names are closest.
  const names = knownModelNames();
  const close = [...new Set(closeMatches(arg, names.map((n) => n.name), 6).map((n) => names.find((k) => k.name === n)?.hubId))];
  const suggest = close.length ? ` (did you mean ${close.slice(0, 3).join(', ')}?)` : '';
  const fetch = arg.includes('/')
    ? `; fetch its config.json (huggingface-cli download ${arg} config.json, which puts it there; gated models need \`huggingface-cli login\` first), or save https://huggingface.co/${arg}/resolve/main/config.json and pass --model path/to/config.json`
    : '; pass --model path/to/config.json, or a Hugging Face id with its organisation (meta-llama/Llama-3.1-8B) once its config.json is in the cache';
  throw new InputError(arg, `no such file, no copy of the Hugging Face model '${arg}' in ${cache}, and not a model gpuwise ships${suggest}${fetch}`);
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
