/**
 * `npm run bench:sandbox`: the sandbox API server under load from a second process (keep-alive
 * HTTP, 16 requests in flight): GETs, LISTs of 1,000 objects, server-side applies, watch fan-out;
 * then its memory holding 10,000 objects. Prints figures; asserts nothing.
 */
import { fork } from 'node:child_process'
import http from 'node:http'
import { startSandbox } from '../../operator/sandbox/index.ts'

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000)
const INFLIGHT = 16

type Job = { kind: 'get' | 'list' | 'apply'; url: string }

if (process.argv[2] === 'load') {
  // The load generator: one process, keep-alive connections, INFLIGHT loops.
  const { kind, url } = JSON.parse(process.argv[3]!) as Job
  const agent = new http.Agent({ keepAlive: true, maxSockets: INFLIGHT })
  const request = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const name = `bench-${i % 1000}`
      const opts =
        kind === 'apply'
          ? { method: 'PATCH', path: `/apis/apps/v1/namespaces/default/deployments/apply-${i % 500}?fieldManager=bench&force=true`, headers: { 'Content-Type': 'application/apply-patch+yaml' } }
          : kind === 'get'
            ? { method: 'GET', path: `/api/v1/namespaces/default/configmaps/${name}` }
            : { method: 'GET', path: '/api/v1/namespaces/default/configmaps' }
      const req = http.request(url + opts.path, { ...opts, agent }, (res) => {
        res.resume()
        res.on('end', () => (res.statusCode! < 300 ? resolve() : reject(new Error(`${kind}: HTTP ${res.statusCode}`))))
      })
      req.on('error', reject)
      if (kind === 'apply') {
        req.end(JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `apply-${i % 500}` }, spec: { replicas: (i % 3) + 1, selector: { matchLabels: { app: `a${i % 500}` } }, template: { metadata: { labels: { app: `a${i % 500}` } }, spec: { containers: [{ name: 'c', image: `img:${i % 7}`, resources: { requests: { cpu: '0.5', memory: '64Mi' } } }] } } } }))
      } else req.end()
    })
  let n = 0
  const end = Date.now() + DURATION_MS
  await Promise.all(Array.from({ length: INFLIGHT }, async () => {
    while (Date.now() < end) await request(n++)
  }))
  process.send!({ perSecond: n / (DURATION_MS / 1000) })
  process.exit(0)
}

const runLoad = (job: Job) =>
  new Promise<number>((resolve, reject) => {
    const child = fork(import.meta.filename, ['load', JSON.stringify(job)], { stdio: 'inherit' })
    child.on('message', (m: { perSecond: number }) => resolve(m.perSecond))
    child.on('exit', (code) => code !== 0 && reject(new Error(`load generator exited ${code}`)))
  })

const mb = (n: number) => `${(n / 1048576).toFixed(0)} MB`
const sandbox = await startSandbox({ controllers: false, requestLogSize: 1000 })
const { cluster, url } = sandbox
const put = (body: object) => {
  const res = cluster.respond({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body, query: new URLSearchParams(), userAgent: 'bench' })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
}
for (let i = 0; i < 1000; i++) put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `bench-${i}`, namespace: 'default', labels: { app: 'bench', shard: String(i % 10) } }, data: { key: `value-${i}`, other: 'x'.repeat(100) } })

console.log(`node ${process.version}; load from a second process, ${INFLIGHT} requests in flight, ${DURATION_MS / 1000} s each\n`)
console.log(`GET one ConfigMap                     ${(await runLoad({ kind: 'get', url })).toFixed(0).padStart(7)} req/s`)
console.log(`LIST 1,000 ConfigMaps                 ${(await runLoad({ kind: 'list', url })).toFixed(0).padStart(7)} req/s`)
console.log(`server-side apply of a Deployment     ${(await runLoad({ kind: 'apply', url })).toFixed(0).padStart(7)} req/s  (500 Deployments, changing replicas and image)`)

// Watch fan-out: 100 watchers of ConfigMaps; 2,000 writes; events delivered per second.
const WATCHERS = 100
const WRITES = 2000
let delivered = 0
const agent = new http.Agent({ keepAlive: true, maxSockets: WATCHERS })
const rv = cluster.store.resourceVersion
const streams = await Promise.all(Array.from({ length: WATCHERS }, () => new Promise<http.ClientRequest>((resolve) => {
  const req = http.get(`${url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, { agent }, (res) => {
    res.on('data', (chunk: Buffer) => {
      for (const b of chunk) if (b === 10) delivered++
    })
    resolve(req)
  })
})))
const start = performance.now()
for (let i = 0; i < WRITES; i++) {
  cluster.respond({ verb: 'patch', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: `bench-${i % 1000}`, body: { data: { key: `w${i}` } }, contentType: 'application/merge-patch+json', query: new URLSearchParams(), userAgent: 'bench' })
}
while (delivered < WATCHERS * WRITES && performance.now() - start < 60_000) await new Promise((r) => setTimeout(r, 5))
const seconds = (performance.now() - start) / 1000
console.log(`watch fan-out: ${WRITES} writes to ${WATCHERS} watchers  ${(delivered / seconds).toFixed(0).padStart(7)} events/s delivered (${delivered} in ${seconds.toFixed(2)} s)`)
for (const s of streams) s.destroy()

// Memory holding 10,000 objects (Deployments with managedFields, as applied).
globalThis.gc?.()
const before = process.memoryUsage()
for (let i = 0; i < 10_000; i++) {
  const res = cluster.respond({
    verb: 'patch', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: `mem-${i}`,
    body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `mem-${i}`, labels: { app: `m${i}` } }, spec: { replicas: 3, selector: { matchLabels: { app: `m${i}` } }, template: { metadata: { labels: { app: `m${i}` } }, spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38-alpine', args: ['-m', '64'], ports: [{ containerPort: 11211 }] }] } } } },
    contentType: 'application/apply-patch+yaml', query: new URLSearchParams({ fieldManager: 'bench' }), userAgent: 'bench',
  })
  if (res.status >= 300) throw new Error(JSON.stringify(res.body))
}
globalThis.gc?.()
const after = process.memoryUsage()
console.log(`\nmemory with 10,000 more objects (applied Deployments): RSS ${mb(after.rss)} (+${mb(after.rss - before.rss)}), heap used ${mb(after.heapUsed)} (+${mb(after.heapUsed - before.heapUsed)})`)
await sandbox.close()
