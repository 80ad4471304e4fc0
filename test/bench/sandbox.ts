/**
 * Benchmark of the sandbox API server: requests per second for get, list (1,000 objects),
 * server-side apply (changing and unchanged), watch fan-out, and the server's own memory at
 * 10,000 objects. The load runs in a child process so that the figures are the server's, after a
 * warm-up of the write path that is not reported.
 *
 *   node test/bench/sandbox.ts
 */
import { fork } from 'node:child_process'
import { Agent, request } from 'node:http'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createCluster, startSandbox } from '../../operator/sandbox/index.ts'
import type { ApiRequest, KubeObject } from '../../operator/sandbox/types.ts'

interface Load {
  url: string
  /** Bearer token of every request (the sandbox answers 401 without one). */
  token: string
  method: string
  /** Paths are taken round-robin. */
  paths: string[]
  /** Bodies are taken round-robin when given. */
  bodies?: string[]
  contentType?: string
  n: number
  concurrency: number
}

function deployment(i: number, image: string, prefix = 'd'): KubeObject {
  const name = `${prefix}${i}`
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name, 'app.kubernetes.io/managed-by': 'memcached-operator' } },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'memcached', image, args: ['-m', '64'], ports: [{ containerPort: 11211, name: 'memcached' }], resources: { limits: { cpu: '500m', memory: '64Mi' } } }] },
      },
    },
  }
}

/** The load generator (child process): runs one Load and reports requests per second. */
async function client(load: Load): Promise<{ rps: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.concurrency })
  const u = new URL(load.url)
  let next = 0
  let errors = 0
  const one = (i: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'User-Agent': 'bench/v1', Authorization: `Bearer ${load.token}` }
      if (load.contentType) headers['Content-Type'] = load.contentType
      const req = request({ host: u.hostname, port: u.port, method: load.method, path: load.paths[i % load.paths.length], agent, headers }, (res) => {
        if ((res.statusCode ?? 0) >= 300) errors++
        res.resume()
        res.on('end', resolve)
      })
      req.on('error', reject)
      if (load.bodies) req.end(load.bodies[i % load.bodies.length])
      else req.end()
    })
  const start = performance.now()
  await Promise.all(
    Array.from({ length: load.concurrency }, async () => {
      while (next < load.n) await one(next++)
    }),
  )
  const seconds = (performance.now() - start) / 1000
  agent.destroy()
  return { rps: load.n / seconds, errors }
}

if (process.argv.includes('--client')) {
  process.on('message', (load: Load) => {
    void client(load).then((r) => process.send?.(r))
  })
} else {
  const child = fork(import.meta.filename, ['--client'], { stdio: 'inherit' })
  const run = (load: Load): Promise<{ rps: number; errors: number }> =>
    new Promise((resolve) => {
      child.once('message', (r) => resolve(r as { rps: number; errors: number }))
      child.send(load)
    })
  const report = (name: string, r: { rps: number; errors: number }): void => {
    console.log(`${name.padEnd(34)} ${Math.round(r.rps).toString().padStart(7)} req/s${r.errors ? `  (${r.errors} errors)` : ''}`)
  }

  const sb = await startSandbox({ controllers: false })
  const token = sb.issueToken({ user: 'bench', groups: ['system:masters'] })
  const D = '/apis/apps/v1/namespaces/default/deployments'
  const N = 1000
  const apply = (image: string, prefix = 'd'): Load => ({
    url: sb.url,
    token,
    method: 'PATCH',
    paths: Array.from({ length: N }, (_, i) => `${D}/${prefix}${i}?fieldManager=bench`),
    bodies: Array.from({ length: N }, (_, i) => JSON.stringify(deployment(i, image, prefix))),
    contentType: 'application/apply-patch+yaml',
    n: N,
    concurrency: 16,
  })
  // Warm-up, not reported: V8 compiles the server's write path over its first thousand or so
  // requests; creating, changing and deleting other objects first measures the server, not that.
  await run(apply('memcached:1.6.38', 'warm-'))
  await run(apply('memcached:1.6.39', 'warm-'))
  await run({ url: sb.url, token, method: 'DELETE', paths: Array.from({ length: N }, (_, i) => `${D}/warm-${i}`), n: N, concurrency: 16 })
  report('apply (create)', await run(apply('memcached:1.6.38')))
  report('apply (unchanged)', await run({ ...apply('memcached:1.6.38'), n: 5 * N }))
  report('apply (changed)', await run(apply('memcached:1.6.39')))
  report('get', await run({ url: sb.url, token, method: 'GET', paths: Array.from({ length: N }, (_, i) => `${D}/d${i}`), n: 20_000, concurrency: 16 }))
  report(`list (${N} deployments)`, await run({ url: sb.url, token, method: 'GET', paths: [D], n: 200, concurrency: 4 }))

  // Watch fan-out: W HTTP watch connections (read in this process, so a lower bound) and W
  // in-process watchers of the same resource; E writes; events delivered per second.
  const W = 50
  const E = 1000
  const u = new URL(sb.url)
  const rv = String(sb.cluster.store.resourceVersion)
  let received = 0
  let allIn: () => void = () => {}
  const done = new Promise<void>((r) => (allIn = r))
  const sockets = await Promise.all(
    Array.from(
      { length: W },
      () =>
        new Promise<ReturnType<typeof request>>((resolve) => {
          const req = request({ host: u.hostname, port: u.port, path: `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, headers: { Authorization: `Bearer ${token}` } }, (res) => {
            res.setEncoding('utf8')
            res.on('data', (chunk: string) => {
              for (let i = chunk.indexOf('\n'); i >= 0; i = chunk.indexOf('\n', i + 1)) received++
              if (received >= W * E) allIn()
            })
            resolve(req)
          })
          req.end()
        }),
    ),
  )
  let delivered = 0
  const watchReq: ApiRequest = { verb: 'watch', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', query: new URLSearchParams({ resourceVersion: rv }) }
  const stops = Array.from({ length: W }, () => sb.cluster.watchRaw(watchReq, { event: () => void delivered++, close: () => {} }))
  const t0 = performance.now()
  for (let i = 0; i < E; i++) {
    sb.cluster.respond({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `w${i}` }, data: { i: String(i) } }, query: new URLSearchParams() })
  }
  const inProcessSeconds = (performance.now() - t0) / 1000
  await done
  const httpSeconds = (performance.now() - t0) / 1000
  for (const stop of stops) stop()
  for (const s of sockets) s.destroy()
  console.log(`${`watch fan-out (${W} HTTP watches)`.padEnd(34)} ${Math.round(received / httpSeconds).toString().padStart(7)} events/s  (${E} writes)`)
  console.log(`${`watch fan-out (${W} in-process)`.padEnd(34)} ${Math.round(delivered / inProcessSeconds).toString().padStart(7)} events/s  (writes included)`)
  child.kill()
  await sb.close()

  // Memory: the store (objects, their bytes, the history window) at 10,000 Deployments.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  gc()
  const before = process.memoryUsage().heapUsed
  const c = createCluster()
  for (let i = 0; i < 10_000; i++) {
    c.respond({ verb: 'patch', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: `d${i}`, contentType: 'application/apply-patch+yaml', body: JSON.stringify(deployment(i, 'memcached:1.6.38')), query: new URLSearchParams({ fieldManager: 'bench' }) })
  }
  // Out of the job that wrote them: what it created stays alive until the job ends (WeakRef targets included).
  await new Promise((r) => setImmediate(r))
  gc()
  const after = process.memoryUsage().heapUsed
  console.log(`${'heap at 10,000 deployments'.padEnd(34)} ${((after - before) / 1024 / 1024).toFixed(0).padStart(7)} MiB  (${c.store.size} objects)`)
}
