/**
 * The bench's user, in a thread of its own as kubectl would be a process of its own: creates
 * Memcacheds `mc-0` … `mc-<count - 1>` of a size, `inFlight` at a time, then posts `done` (or the
 * error), each with `overlays` when given. Its requests go over HTTPS like any client's, so the sandbox's thread serves them
 * without also running the client.
 */
import { KubeConfig } from '@kubernetes/client-node'
import { parentPort, workerData } from 'node:worker_threads'
import { KubeClient } from '../../operator/controller/client.ts'

const { kubeconfigPath, count, size, inFlight, overlays } = workerData as { kubeconfigPath: string; count: number; size: number; inFlight: number; overlays?: unknown[] }
const kc = new KubeConfig()
kc.loadFromFile(kubeconfigPath)
const user = new KubeClient(kc, { userAgent: 'bench', fieldManager: 'bench' })
let next = 0
try {
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) {
        const i = next++
        await user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: `mc-${i}`, namespace: 'default' }, spec: { size, ...(overlays ? { overlays } : {}) } })
      }
    }),
  )
  parentPort?.postMessage({ done: true })
} catch (e) {
  parentPort?.postMessage({ error: e instanceof Error ? e.message : String(e) })
} finally {
  user.close()
}
