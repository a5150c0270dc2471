/**
 * A tiny YAML emitter for the flat, string/number/boolean mappings that launch configs need
 * (nested mappings allowed). Strings that YAML would read as something else are quoted.
 */
export type YamlValue = string | number | boolean | null | { [key: string]: YamlValue };

function scalar(v: string | number | boolean | null): string {
  if (v === null) return 'null';
  if (typeof v !== 'string') return String(v);
  const plain = /^[A-Za-z_/][A-Za-z0-9_./-]*$/.test(v) && !/^(true|false|yes|no|on|off|null|~)$/i.test(v);
  return plain ? v : JSON.stringify(v);
}

export function toYaml(obj: { [key: string]: YamlValue }, indent = 0): string {
  const pad = ' '.repeat(indent);
  let out = '';
  for (const [k, v] of Object.entries(obj)) {
    if (v !== null && typeof v === 'object') out += `${pad}${k}:\n${toYaml(v, indent + 2)}`;
    else out += `${pad}${k}: ${scalar(v)}\n`;
  }
  return out;
}
