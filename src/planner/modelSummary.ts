/**
 * Reads either a Hugging Face config.json or a model summary in gpuwise's own format
 * (`{"format": "gpuwise-model/1", ...ModelDescription}`), which the Python probe of the `doctor` issue
 * will write for any nn.Module. Both end as a ModelDescription.
 */
import { ConfigError } from './errors.js';
import { describeHfConfig } from './hfConfig.js';
import type { ModelDescription } from './model.js';

export const MODEL_SUMMARY_FORMAT = 'gpuwise-model/1';

const NUMERIC: (keyof ModelDescription)[] = [
  'paramCount',
  'activeParamCount',
  'embeddingParamCount',
  'blockParamCount',
  'rootParamCount',
  'layers',
  'hidden',
  'heads',
  'kvHeads',
  'headDim',
  'intermediate',
  'vocab',
  'maxPositions',
];

export function describeModel(json: unknown): ModelDescription {
  if (typeof json === 'object' && json !== null && (json as Record<string, unknown>).format !== undefined) {
    const o = json as Record<string, unknown>;
    if (o.format !== MODEL_SUMMARY_FORMAT)
      throw new ConfigError('format', `unknown model summary format ${JSON.stringify(o.format)} (expected ${MODEL_SUMMARY_FORMAT})`);
    for (const k of NUMERIC) {
      const v = o[k];
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        throw new ConfigError(k, v === undefined ? 'missing' : `must be a non-negative number, got ${JSON.stringify(v)}`);
    }
    if (o.family !== 'gpt2' && o.family !== 'bert' && o.family !== 'llama')
      throw new ConfigError('family', `must be gpt2, bert or llama, got ${JSON.stringify(o.family)}`);
    if (o.norm !== 'layernorm' && o.norm !== 'rmsnorm') throw new ConfigError('norm', 'must be layernorm or rmsnorm');
    if (o.mlpActivation !== 'gelu' && o.mlpActivation !== 'gelu-tanh-composite' && o.mlpActivation !== 'swiglu')
      throw new ConfigError('mlpActivation', 'must be gelu, gelu-tanh-composite or swiglu');
    const { format: _format, ...rest } = o;
    return {
      paramGroups: [],
      hiddenDropout: 0,
      attentionDropout: 0,
      tiedEmbeddings: false,
      causal: true,
      name: 'model',
      modelType: 'custom',
      architecture: 'custom',
      ...rest,
    } as unknown as ModelDescription;
  }
  return describeHfConfig(json);
}
