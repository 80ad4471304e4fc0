/**
 * `npm run soak`: the operator in its own process against the sandbox for SOAK_MINUTES (default
 * 10) with faults (5% 500/503, 2% 409, 1% 429 with Retry-After, latency, watches dropped every few
 * seconds and 410 on resume) and churn (SOAK_CRS CRs, default 200, a seeded stream of spec
 * changes, and CRs deleted and re-created). Every SOAK_SAMPLE_S seconds it prints the operator's
 * RSS, V8 heap, open file descriptors and active handles (from /proc and the operator's own
 * /metrics), and at the end stops the faults and measures how long until every CR converges to
 * its render. Exits 1 if it does not converge or the operator dies; otherwise prints the figures
 * (including the RSS and handle trend between the first and last quarter) and exits 0.
 */
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { ApiError, type KubeClient } from '../../operator/controller/client.ts'
import { loadChart } from '../../operator/render/chart.ts'
import { startSandbox } from '../../operator/sandbox/index.ts'
import type { KubeObject } from '../../operator/sandbox/types.ts'
import { MC, memcached, randomSpecPatch, seeded, waitConverged } from '../fixtures/reliability/support.ts'
import { clientFor } from '../support/operator.ts'

const root = resolve(import.meta.dirname, '..', '..')
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10)
const CRS = Number(process.env.SOAK_CRS ?? 200)
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 30)
const SEED = Number(process.env.SOAK_SEED ?? 42)
const CHANGES_PER_S = Number(process.env.SOAK_CHANGES_PER_S ?? 5)
const FAULTS = { errorRate: 0.05, conflictRate: 0.02, throttleRate: 0.01, retryAfterS: 1, latencyMs: 10, watchDropS: 5, expireOnResume: true, seed: SEED }

const freePort = () => new Promise<number>((ok) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => ok(p)) }) })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const mb = (n: number) => `${n.toFixed(1)} MB`

/** The test's own requests meet the faults too: retried until the server answers. */
async function persist<T>(fn: () => Promise<T>): Promise<T | undefined> {
  for (let i = 0; i < 100; i++) {
    try {
      return await fn()
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return undefined
      if (!(err instanceof ApiError) || ![409, 429, 500, 503].includes(err.status)) throw err
      await sleep(20)
    }
  }
  throw new Error('gave up after 100 retries')
}

interface Sample { t: number; rssMb: number; heapMb: number; fds: number; handles: number; reconciles: number; requests: number }

const chart = loadChart()
const sandbox = await startSandbox({ podReadyDelayMs: 200, requestLogSize: 0, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
const metricsPort = await freePort()
const operator = spawn(process.execPath, ['--max-semi-space-size=2', join(root, 'operator/cli/main.js'), 'run', '--kubeconfig', sandbox.kubeconfigPath, '--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', '0', '--log-level', 'error'], { stdio: ['ignore', 'ignore', 'inherit'] })
let operatorExit: string | undefined
operator.on('exit', (code, signal) => (operatorExit = `exit ${code ?? signal}`))
const pid = operator.pid!
const client: KubeClient = clientFor(sandbox, 'soak/1', 'soak')

async function sample(start: number): Promise<Sample> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssMb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
  const fds = readdirSync(`/proc/${pid}/fd`).length
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const metric = (re: RegExp) => [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0)
  return {
    t: Math.round((Date.now() - start) / 1000),
    rssMb,
    heapMb: metric(/^nodejs_heap_size_used_bytes (\S+)/gm) / 1048576,
    fds,
    handles: metric(/^nodejs_active_handles_total (\S+)/gm),
    reconciles: metric(/^controller_runtime_reconcile_total\{[^}]*\} (\S+)/gm),
    requests: sandbox.requests.counts().byUserAgent[Object.keys(sandbox.requests.counts().byUserAgent).find((k) => k.startsWith('memcached-operator/')) ?? ''] ?? 0,
  }
}

try {
  for (let i = 0; ; i++) {
    try {
      await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      break
    } catch {
      if (i > 200) throw new Error('the operator did not start')
      await sleep(100)
    }
  }
  const rand = seeded(SEED)
  const names = Array.from({ length: CRS }, (_, i) => `soak-${i}`)
  for (const n of names) await persist(() => client.create(memcached(n, { size: 1 + Math.floor(rand() * 3) })))
  await waitConverged(client, chart, 300_000)
  console.log(`soak: ${CRS} CRs converged; ${MINUTES} min of faults and churn (seed ${SEED}); operator pid ${pid}`)
  console.log('   t(s)      RSS     heap   fds  handles  reconciles  requests')
  const start = Date.now()
  sandbox.faults.set(FAULTS)
  const samples: Sample[] = []
  let nextSample = start
  let changes = 0
  let recreated = 0
  while (Date.now() - start < MINUTES * 60_000) {
    if (operatorExit) throw new Error(`the operator died: ${operatorExit}`)
    if (Date.now() >= nextSample) {
      const s = await sample(start)
      samples.push(s)
      console.log(`${String(s.t).padStart(7)} ${mb(s.rssMb).padStart(9)} ${mb(s.heapMb).padStart(8)} ${String(s.fds).padStart(5)} ${String(s.handles).padStart(8)} ${String(s.reconciles).padStart(11)} ${String(s.requests).padStart(9)}`)
      nextSample += SAMPLE_S * 1000
    }
    const name = names[Math.floor(rand() * names.length)]!
    if (rand() < 0.03) {
      // Churn of whole objects: deleted (garbage-collected children) and created again.
      await persist(() => client.delete({ ...MC, namespace: 'default', name }))
      for (let i = 0; i < 100; i++) {
        const gone = await persist(() => client.get({ ...MC, namespace: 'default', name })).then((o) => o === undefined)
        if (gone) break
        await sleep(50)
      }
      await persist(() => client.create(memcached(name, { size: 1 + Math.floor(rand() * 3) })))
      recreated++
    } else {
      await persist(() => client.patch({ ...MC, namespace: 'default', name }, { spec: randomSpecPatch(rand) }, { type: 'merge' }))
    }
    changes++
    await sleep(1000 / CHANGES_PER_S)
  }
  const faultSeconds = (Date.now() - start) / 1000
  sandbox.faults.set({})
  const stopped = Date.now()
  const convergeMs = await waitConverged(client, chart, 300_000)
  const last = await sample(start)
  samples.push(last)
  const quarter = Math.max(1, Math.floor(samples.length / 4))
  const avg = (xs: Sample[], f: (s: Sample) => number) => xs.reduce((a, s) => a + f(s), 0) / xs.length
  const first = samples.slice(0, quarter)
  const lastQ = samples.slice(-quarter)
  const counts = sandbox.requests.counts()
  const opRequests = Object.entries(counts.byUserAgent).filter(([k]) => k.startsWith('memcached-operator/')).reduce((a, [, n]) => a + n, 0)
  console.log(`soak: ${changes} spec changes (${recreated} deletes and re-creates) over ${faultSeconds.toFixed(0)} s of faults`)
  console.log(`soak: every CR converged ${((Date.now() - stopped) / 1000).toFixed(1)} s (${convergeMs} ms polling) after the faults stopped`)
  console.log(`soak: operator requests ${opRequests} in all, ${(opRequests / CRS / faultSeconds).toFixed(2)} per CR per second`)
  console.log(`soak: RSS first quarter ${mb(avg(first, (s) => s.rssMb))}, last quarter ${mb(avg(lastQ, (s) => s.rssMb))}, max ${mb(Math.max(...samples.map((s) => s.rssMb)))}`)
  console.log(`soak: heap first quarter ${mb(avg(first, (s) => s.heapMb))}, last quarter ${mb(avg(lastQ, (s) => s.heapMb))}`)
  console.log(`soak: fds first quarter ${avg(first, (s) => s.fds).toFixed(1)}, last quarter ${avg(lastQ, (s) => s.fds).toFixed(1)}; active handles ${avg(first, (s) => s.handles).toFixed(1)} → ${avg(lastQ, (s) => s.handles).toFixed(1)}`)
  process.exitCode = 0
} catch (err) {
  console.error(`soak failed: ${err instanceof Error ? err.message : String(err)}`)
  process.exitCode = 1
} finally {
  operator.kill('SIGTERM')
  await new Promise((r) => operator.once('exit', r))
  client.close()
  await sandbox.close()
}
