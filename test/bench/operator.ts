/**
 * `npm run bench:operator`: N Memcached CRs (default 1,000, size 3) created 100 at a time in the
 * sandbox by a client in a thread of its own, with the operator in its own process. Prints the
 * time until every CR's status.nodes is complete, the operator's requests and reconciles per CR,
 * its memory per CR (heap and RSS grown from the synced empty cache), the CPU time each process
 * used (on a shared machine a steadier figure than the wall clock), and then an idle resync: its
 * writes and reads (should be 0) and duration; then a restart: the operator is stopped and a fresh
 * one started against the converged fleet, with the time until its caches are synced (/readyz)
 * and until every CR has been reconciled once, its peak RSS and its writes (should be 0); then a
 * 429 storm (storm.ts): an operator with a client-side rate limit, its writes all refused for a
 * window while CRs change, with the requests per second it sent beside the limit. Prints
 * figures; asserts nothing. BENCH_NODE_FLAGS
 * passes node's flags to the operator process (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` or
 * `--heapsnapshot-signal=SIGUSR2`). Run with `node --expose-gc` to have the sandbox's heap printed after a full collection;
 * BENCH_SANDBOX_HEAPSNAPSHOT=<file> writes a heap snapshot of the sandbox's process at convergence.
 * BENCH_ACCOUNT_CONTROLLERS=1 records the simulated controllers' requests too and prints every
 * client's writes by resource (the recording costs the sandbox a few percent of its CPU).
 * BENCH_OVERLAY=1 gives every CR an overlay (a strategic merge patch of its Deployment's pod
 * template: a toleration and an annotation), to compare with the run without.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { loadChart } from '../../operator/render/chart.ts'
import { startSandbox, type RequestRecord } from '../../operator/sandbox/index.ts'
import type { KubeObject } from '../../operator/sandbox/types.ts'
import { clientFor, WRITE_VERBS } from '../support/operator.ts'
import { printFigures, stormWindow } from './storm.ts'

const root = resolve(import.meta.dirname, '..', '..')
const N = Number(process.env.BENCH_CRS ?? 1000)
const SIZE = Number(process.env.BENCH_SIZE ?? 3)
const OVERLAYS = process.env.BENCH_OVERLAY === '1' ? [{ name: 'bench', target: { kind: 'Deployment' }, strategicMerge: { spec: { template: { metadata: { annotations: { 'mesh.example.com/inject': 'false' } }, spec: { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }] } } } } }] : undefined
const RESYNC_S = 30
// Give up after this long (BENCH_LIMIT_S; a loaded shared machine can take far longer than the target).
const LIMIT_S = Number(process.env.BENCH_LIMIT_S ?? 1800)

const freePort = () => new Promise<number>((ok) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => ok(p)) }) })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** User + system CPU seconds of a process so far (/proc/<pid>/stat, in clock ticks of 1/100 s). */
const cpuOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}
const rssOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

// The simulated controllers' requests are not counted (accountControllers) unless asked: the operator's are reported.
const accountControllers = process.env.BENCH_ACCOUNT_CONTROLLERS === '1'
const chart = loadChart()
const sandbox = await startSandbox({ podReadyDelayMs: 200, requestLogSize: 1_000_000, accountControllers, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
const metricsPort = await freePort()
// The operator as the image runs it: node's flags from the Dockerfile's ENTRYPOINT (BENCH_NODE_FLAGS overrides).
const entrypoint = JSON.parse(/^ENTRYPOINT\s+(\[.*\])$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))![1]!) as string[]
const imageFlags = entrypoint.slice(1, entrypoint.findIndex((a) => a.endsWith('main.js')))
const nodeFlags = process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean) : imageFlags
// And the NODE_OPTIONS of kustomize/manager (the heap cap tied to the container's limit).
const managerNodeOptions = /name: NODE_OPTIONS\s+value: (.*)$/m.exec(readFileSync(join(root, 'kustomize/manager/manager.yaml'), 'utf8'))?.[1]?.trim()
const operator = spawn(process.execPath, [...nodeFlags, join(root, 'operator/cli/main.js'), 'run', '--kubeconfig', sandbox.kubeconfigPath, '--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', '0', '--concurrency', '8', '--resync-period', `${RESYNC_S}s`, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...(managerNodeOptions ? { NODE_OPTIONS: managerNodeOptions } : {}) } })
/** The operator's metrics; a request that meets a keep-alive connection the server just closed is sent again. */
const metricsText = async (): Promise<string> => {
  try {
    return await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  } catch {
    return await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  }
}
const reconciles = async () => {
  const text = await metricsText()
  return [...text.matchAll(/^controller_runtime_reconcile_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0)
}
for (;;) {
  try {
    await reconciles()
    break
  } catch {
    await sleep(50)
  }
}
const heapUsed = async () => Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(await metricsText())?.[1] ?? 0) / 1048576
await sleep(1000)
// The operator with its caches synced and empty: what each CR adds is measured from here.
const emptyHeap = await heapUsed()
const emptyRss = rssOf(operator.pid!).rss
sandbox.requests.reset()
const opUA = (ua: string | undefined) => ua?.startsWith('memcached-operator/') ?? false
console.log(`${N} Memcached CRs of size ${SIZE}${OVERLAYS ? ', each with an overlay' : ''}; sandbox pods become Ready after 200 ms; operator --concurrency 8, node ${process.version} ${nodeFlags.join(' ')}${managerNodeOptions ? `, NODE_OPTIONS=${managerNodeOptions}` : ''}\n`)

/**
 * The CRs whose status.nodes is complete, kept from the store's own events (what a write tells its
 * subscribers, no request the accounting would count): polling every CR ten times a second cost
 * this process, which is the sandbox's, more than a millisecond per CR at 10,000.
 */
const complete = new Set<string>()
const unsubscribe = sandbox.cluster.store.subscribe('cache.example.com/memcacheds', (e) => {
  const key = `${e.current.namespace}/${e.current.name}`
  const c = e.current.obj as { status?: { nodes?: string[]; readyReplicas?: number } }
  if (e.type !== 'DELETED' && c.status?.nodes?.length === SIZE && c.status.readyReplicas === SIZE) complete.add(key)
  else complete.delete(key)
})
const start = performance.now()
const cpuStart = { sandbox: process.cpuUsage(), operator: cpuOf(operator.pid!) }
// Every write of every client (the CRs' creation, the operator's, the simulated controllers') moves the resourceVersion by one.
const rvStart = sandbox.cluster.store.resourceVersion
const reconcilesStart = await reconciles()
// The CRs are created by a client in a thread of its own (as kubectl runs in a process of its
// own), 100 creates in flight at a time: ten thousand at once would be ten thousand connections.
await new Promise<void>((resolve, reject) => {
  const creator = new Worker(new URL('./create-crs.ts', import.meta.url), { workerData: { kubeconfigPath: sandbox.kubeconfigPath, count: N, size: SIZE, inFlight: 100, ...(OVERLAYS ? { overlays: OVERLAYS } : {}) } })
  creator.once('message', (m: { done?: true; error?: string }) => (m.error !== undefined ? reject(new Error(`creating the CRs: ${m.error}`)) : resolve()))
  creator.once('error', reject)
})
const created = performance.now()
let peak = 0
let nextProgress = start + 30_000
for (;;) {
  peak = Math.max(peak, rssOf(operator.pid!).peak)
  const done = complete.size
  if (done === N) break
  if (performance.now() - start > LIMIT_S * 1000) throw new Error(`only ${done}/${N} converged after ${LIMIT_S} s`)
  if (performance.now() >= nextProgress) {
    // A line every 30 s on stderr: how far, and what it costs so far (a long run on a busy machine).
    const u = process.cpuUsage(cpuStart.sandbox)
    process.stderr.write(`  ${((performance.now() - start) / 1000).toFixed(0)} s: ${done}/${N} converged, ${(await reconciles()) - reconcilesStart} reconciles; operator RSS ${rssOf(operator.pid!).rss.toFixed(0)} MB, heap used ${(await heapUsed()).toFixed(0)} MB; CPU sandbox ${((u.user + u.system) / 1e6).toFixed(0)} s, operator ${(cpuOf(operator.pid!) - cpuStart.operator).toFixed(0)} s\n`)
    nextProgress += 30_000
  }
  await sleep(100)
}
const converged = performance.now()
unsubscribe()
const store = () => sandbox.cluster.store.size
const cpuUsed = { sandbox: (() => { const u = process.cpuUsage(cpuStart.sandbox); return (u.user + u.system) / 1e6 })(), operator: cpuOf(operator.pid!) - cpuStart.operator }
const allWrites = sandbox.cluster.store.resourceVersion - rvStart
const reconcilesDone = (await reconciles()) - reconcilesStart
const log = sandbox.requests.log().filter((r) => opUA(r.userAgent))
/** Requests by verb and resource (`patch deployments`, `update pods/status`). */
const countByRequest = (records: readonly RequestRecord[]): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const r of records) {
    const k = `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`
    out[k] = (out[k] ?? 0) + 1
  }
  return out
}
const byVerb = countByRequest(log)
const writes = log.filter((r) => WRITE_VERBS.has(r.verb))
console.log(`created ${N} CRs in ${((created - start) / 1000).toFixed(1)} s; every status.nodes complete after ${((converged - start) / 1000).toFixed(1)} s`)
console.log(`CPU time until then: sandbox (and this script) ${cpuUsed.sandbox.toFixed(1)} s, operator ${cpuUsed.operator.toFixed(1)} s (${((1000 * cpuUsed.operator) / N).toFixed(1)} ms per CR); ${reconcilesDone} reconciles (${(reconcilesDone / N).toFixed(2)} per CR)`)
console.log(`writes stored, all clients: ${allWrites} (${(allWrites / N).toFixed(2)} per CR)`)
console.log(`operator requests: ${log.length} (${(log.length / N).toFixed(2)} per CR); writes ${writes.length} (${(writes.length / N).toFixed(2)} per CR)`)
for (const [k, v] of Object.entries(byVerb).sort()) console.log(`  ${k.padEnd(36)} ${String(v).padStart(6)}  ${(v / N).toFixed(2)} per CR`)
if (accountControllers) {
  const all = countByRequest(sandbox.requests.log().filter((r) => WRITE_VERBS.has(r.verb)))
  console.log('writes of every client (BENCH_ACCOUNT_CONTROLLERS):')
  for (const [k, v] of Object.entries(all).sort()) console.log(`  ${k.padEnd(36)} ${String(v).padStart(6)}  ${(v / N).toFixed(2)} per CR`)
}
const heap = async () => {
  const text = await metricsText()
  const v = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1048576
  return `heap used ${v('nodejs_heap_size_used_bytes').toFixed(0)} MB of ${v('nodejs_heap_size_total_bytes').toFixed(0)} MB, external ${v('nodejs_external_memory_bytes').toFixed(0)} MB`
}
console.log(`operator peak RSS ${peak.toFixed(0)} MB (${await heap()})`)
{
  // The sandbox (with this script) in this process: its memory at convergence, after a full collection when node runs with --expose-gc.
  const g = (globalThis as { gc?: () => void }).gc
  if (g) g()
  const m = process.memoryUsage()
  if (process.env.BENCH_SANDBOX_HEAPSNAPSHOT) console.log(`heap snapshot of the sandbox process: ${(await import('node:v8')).writeHeapSnapshot(process.env.BENCH_SANDBOX_HEAPSNAPSHOT)}`)
  console.log(`sandbox process RSS ${(m.rss / 1048576).toFixed(0)} MB, peak ${rssOf(process.pid).peak.toFixed(0)} MB; heap used ${(m.heapUsed / 1048576).toFixed(0)} MB${g ? ' (after a full GC)' : ''}, external ${(m.external / 1048576).toFixed(0)} MB; ${store()} objects stored`)
}
const perCr = () => `${(((1024 * (rssOf(operator.pid!).rss - emptyRss)) / N)).toFixed(1)} KB RSS`
console.log(`memory per CR: heap used grew from ${emptyHeap.toFixed(0)} MB (caches synced, empty) to ${(await heapUsed()).toFixed(0)} MB, ${((1024 * ((await heapUsed()) - emptyHeap)) / N).toFixed(1)} KB per CR; ${perCr()} per CR\n`)

// Idle resync: nothing changed, every CR is reconciled again by the periodic resync.
await sleep(2000)
sandbox.requests.reset()
const before = await reconciles()
const waitStart = performance.now()
const idleCpu = { sandbox: process.cpuUsage(), operator: cpuOf(operator.pid!) }
while ((await reconciles()) < before + N) await sleep(100)
const resyncSeen = performance.now()
const idleWrites = sandbox.requests.log().filter((r) => opUA(r.userAgent) && !['get', 'list', 'watch'].includes(r.verb)).length
const idleReads = sandbox.requests.log().filter((r) => opUA(r.userAgent) && ['get', 'list'].includes(r.verb))
// Discovery documents (no resource): the look for optional kinds the cluster does not serve, once
// a discovery period whatever the number of CRs; reads of objects are what a reconcile would make.
const discoveryReads = idleReads.filter((r) => r.resource === '').length
const idleUsed = { sandbox: (() => { const u = process.cpuUsage(idleCpu.sandbox); return (u.user + u.system) / 1e6 })(), operator: cpuOf(operator.pid!) - idleCpu.operator }
console.log(`idle resync of ${N} CRs (period ${RESYNC_S} s): ${idleWrites} writes, ${idleReads.length - discoveryReads} reads of objects (${discoveryReads} of discovery documents); all ${N} reconciled within ${((resyncSeen - waitStart) / 1000).toFixed(1)} s of waiting`)
// Nothing changes meanwhile: what each process spends is its background work (resyncs, sweeps, bookmarks).
console.log(`CPU in those ${((resyncSeen - waitStart) / 1000).toFixed(1)} s: operator ${idleUsed.operator.toFixed(1)} s, sandbox (and this script) ${idleUsed.sandbox.toFixed(1)} s`)
console.log(`operator RSS after the resync ${rssOf(operator.pid!).rss.toFixed(0)} MB, peak ${rssOf(operator.pid!).peak.toFixed(0)} MB (${await heap()}); per CR ${((1024 * ((await heapUsed()) - emptyHeap)) / N).toFixed(1)} KB of heap, ${perCr()}`)
operator.kill('SIGTERM')
await new Promise((r) => operator.once('exit', r))

/** An operator process (as the first) with `args` added, its endpoints on free ports. */
async function spawnOperator(args: string[]) {
  const [port, probePort] = [await freePort(), await freePort()]
  const proc = spawn(process.execPath, [...nodeFlags, join(root, 'operator/cli/main.js'), 'run', '--kubeconfig', sandbox.kubeconfigPath, '--metrics-bind-address', `127.0.0.1:${port}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`, '--concurrency', '8', '--resync-period', `${RESYNC_S}s`, '--log-level', 'warn', ...args], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...(managerNodeOptions ? { NODE_OPTIONS: managerNodeOptions } : {}) } })
  const get = async (url: string): Promise<{ status: number; text: string } | undefined> => {
    try {
      const r = await fetch(url)
      return { status: r.status, text: await r.text() }
    } catch {
      return undefined
    }
  }
  const metrics = async (): Promise<string> => (await get(`http://127.0.0.1:${port}/metrics`))?.text ?? ''
  const reconciles = async (): Promise<number> => [...(await metrics()).matchAll(/^controller_runtime_reconcile_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0)
  return { proc, get, metrics, reconciles, probePort }
}

// Restart: a fresh operator against the converged fleet, as after a rollout or a crash. Its caches
// fill from watch-lists the sandbox streams (lists and watches as kube-apiserver serves them:
// a resourceVersion=0 list would come in one piece); then every CR is reconciled once, with
// nothing to change.
{
  await sleep(1000)
  sandbox.requests.reset()
  const restartStart = performance.now()
  const { proc: fresh, get, reconciles: freshReconciles, probePort } = await spawnOperator([])
  let peak2 = 0
  const watchPeak = setInterval(() => {
    if (fresh.pid !== undefined && fresh.exitCode === null) peak2 = Math.max(peak2, rssOf(fresh.pid).peak)
  }, 50)
  while ((await get(`http://127.0.0.1:${probePort}/readyz`))?.status !== 200) {
    if (fresh.exitCode !== null) throw new Error(`the restarted operator exited with ${fresh.exitCode}`)
    await sleep(20)
  }
  const synced = performance.now()
  while ((await freshReconciles()) < N) await sleep(100)
  const firstPass = performance.now()
  await sleep(1000)
  clearInterval(watchPeak)
  peak2 = Math.max(peak2, rssOf(fresh.pid!).peak)
  const restartLog = sandbox.requests.log().filter((r) => opUA(r.userAgent))
  const restartWrites = restartLog.filter((r) => WRITE_VERBS.has(r.verb))
  const reads = countByRequest(restartLog.filter((r) => !WRITE_VERBS.has(r.verb)))
  console.log(`\nrestart against the converged fleet (${store()} objects stored): caches synced (/readyz) ${((synced - restartStart) / 1000).toFixed(1)} s after the process started; every CR reconciled once ${((firstPass - restartStart) / 1000).toFixed(1)} s after it started`)
  console.log(`  writes ${restartWrites.length}${restartWrites.length ? ` (${Object.entries(countByRequest(restartWrites)).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}; reads: ${Object.entries(reads).sort().map(([k, v]) => `${k} ${v}`).join(', ')}`)
  console.log(`  restarted operator peak RSS ${peak2.toFixed(0)} MB, RSS now ${rssOf(fresh.pid!).rss.toFixed(0)} MB`)
  fresh.kill('SIGTERM')
  await new Promise((r) => fresh.once('exit', r))
}

// A 429 storm: an operator with a client-side rate limit (BENCH_STORM_QPS / BENCH_STORM_BURST,
// 20 / 30) settles the fleet, then BENCH_STORM_CRS of the CRs (200) are changed while every write
// of the operator is refused 429 for BENCH_STORM_WINDOW_S (10 s), with a Retry-After of
// BENCH_STORM_RETRY_AFTER seconds (0). The requests per second it sends stay within the limit.
{
  const env = (k: string, d: number): number => (process.env[k] !== undefined ? Number(process.env[k]) : d)
  const [qps, burst] = [env('BENCH_STORM_QPS', 20), env('BENCH_STORM_BURST', 30)]
  sandbox.requests.reset()
  const op = await spawnOperator(['--kube-api-qps', String(qps), '--kube-api-burst', String(burst)])
  while ((await op.get(`http://127.0.0.1:${op.probePort}/readyz`))?.status !== 200) {
    if (op.proc.exitCode !== null) throw new Error(`the storm's operator exited with ${op.proc.exitCode}`)
    await sleep(20)
  }
  while ((await op.reconciles()) < N) await sleep(100)
  const user = clientFor(sandbox, 'bench-user/1', 'bench-storm')
  const names = Array.from({ length: Math.min(N, env('BENCH_STORM_CRS', 200)) }, (_, i) => `mc-${i}`)
  console.log(`\n429 storm (an operator with --kube-api-qps ${qps} --kube-api-burst ${burst}, its caches synced and every CR reconciled once):`)
  printFigures(await stormWindow({ sandbox, chart, user, names, qps, burst, metrics: op.metrics }, { windowS: env('BENCH_STORM_WINDOW_S', 10), retryAfterS: env('BENCH_STORM_RETRY_AFTER', 0), mark: 'storm' }), '  ')
  user.close()
  op.proc.kill('SIGTERM')
  await new Promise((r) => op.proc.once('exit', r))
}
await sandbox.close()
