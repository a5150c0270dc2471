/** Shell: file -> TraceModel (parse + build). */
import { TraceModelBuilder } from '../trace/builder.js';
import type { TraceModel } from '../trace/model.js';
import { type ReadProgress, readTraceFile } from './readTrace.js';

export async function loadTrace(path: string, onProgress?: ReadProgress): Promise<TraceModel> {
  const builder = new TraceModelBuilder(path);
  const summary = await readTraceFile(path, builder, onProgress);
  return builder.finish(summary.originUs, summary.warnings);
}
