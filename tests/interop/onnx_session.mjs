// ONNX Runtime (onnxruntime-node from NPM_DIR) sessions on the CPU provider for the export tests.
// session.qdq_matmulnbits_accuracy_level 0: the CPU provider fuses a QDQ graph's DequantizeLinear +
// MatMul into MatMulNBits and by default (4) rounds the activations to int8 blocks there, a CPU
// shortcut the graph does not ask for; 0 computes the graph as written (float products of the
// DequantizeLinear values). MatMulNBits nodes of the default export keep their own accuracy_level.
import { createRequire } from 'node:module';
import path from 'node:path';

export function onnxRuntime(npmDir) {
  const ort = createRequire(path.resolve(npmDir, 'package.json'))('onnxruntime-node');
  const open = (file) => ort.InferenceSession.create(file, {
    executionProviders: ['cpu'],
    extra: { session: { qdq_matmulnbits_accuracy_level: '0' } },
  });
  const i64 = (a, dims) => new ort.Tensor('int64', BigInt64Array.from(a.map(BigInt)), dims);
  return { ort, open, i64 };
}
