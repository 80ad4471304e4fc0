/**
 * A rollout of a revision that re-creates every workload (another chart name: every selector
 * moves) under the operator's pacing of re-creations (reconcile/pacing.ts,
 * `--max-concurrent-recreations 1`, the default): the CRs of a wave take their turns one at a
 * time, each holding its slot until its replacement is ready. The health gate counts a CR that
 * waits for its turn (Progressing RecreationQueued) as waiting, not failed: its deadline does not
 * run meanwhile, so a wave larger than the deadline's worth of turns still succeeds, and the
 * Rollout says what its wave waits on.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { rolloutCRD } from '../operator/api/rollout-crd.ts'
import { revisionName } from '../operator/api/chart-revision.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { startOperator } from '../operator/cli/run.ts'
import { chartFromFiles, DEFAULT_CHART_DIR, loadChart, readChartFiles } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually } from './support/operator.ts'

const own = loadChart()
const nameA = revisionName(own)
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const RO = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout' } as const
type Condition = { type: string; status: string; reason: string; message: string }
type Cr = { metadata: { name: string }; spec: { chartRevision?: string }; status?: { chartRevision?: string; conditions?: Condition[] } }
type RoStatus = { phase?: string; message?: string; members?: { memcached: string; state: string; message?: string }[]; conditions?: Condition[] }

// Pods ready a second after they start: each re-creation holds the one slot for at least that long.
const sandbox = await startSandbox({ podReadyDelayMs: 1000, installCRDs: [memcachedCRD(own), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
t.teardown(() => sandbox.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)
const user = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => user.close())
// No delete budget (`--max-deletes 0`): what paces this rollout is the re-creation slot alone.
const operator = await startOperator(
  { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 100, maxDeletes: '0', maxConcurrentRecreations: '1' },
  captureIO(),
  pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
)
t.teardown(() => operator.stop())

const fleet = async (): Promise<Cr[]> => (await user.list(MC)).items as unknown as Cr[]
const rollout = async (name: string): Promise<RoStatus> => ((await user.get({ ...RO, name })).status ?? {}) as RoStatus

const N = 6
for (let i = 0; i < N; i++) await user.create({ ...MC, metadata: { name: `mc-${i}`, namespace: 'default' }, spec: { size: 1 } })
await eventually('the fleet runs A', async () => ((await fleet()).every((cr) => cr.status?.chartRevision === nameA && cr.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ? true : undefined), 60_000)

t.test('a rollout whose CRs re-create their workloads one at a time: the CRs waiting for their turn do not fail the gate, the Rollout says what it waits on, and it succeeds', async (t) => {
  // B: the chart renamed, so every Deployment's selector moves and it must be re-created.
  const dirB = chartWith({ 'Chart.yaml': readFileSync(join(DEFAULT_CHART_DIR, 'Chart.yaml'), 'utf8').replace(/^name: memcached$/m, 'name: cache') })
  const nameB = revisionName(chartFromFiles(readChartFiles(dirB), dirB))
  t.equal(await runCli(['chart', 'push', dirB, '--kubeconfig', sandbox.kubeconfigPath], captureIO()), 0)
  // Six turns of at least a second each, all in flight at once, against a 3 s deadline: the last
  // CRs wait longer than the deadline for their turn.
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, maxInFlight: N, healthDeadline: '3s' } }))
  const waiting = await eventually('the wave waits for re-creation slots', async () => {
    const s = await rollout('to-b')
    return s.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted' ? s : undefined
  }, 30_000)
  t.match(waiting.message, /^wave 1\/1 waits on the damage budget: [1-5] of its Memcacheds wait for the operator's budget of re-creations at a time \(--max-concurrent-recreations\); their health deadline does not run meanwhile/)
  t.ok(waiting.members?.some((m) => m.state === 'moving' && /^waits on the damage budget: Deployment default\/mc-\d must be deleted and re-created \(spec\.selector cannot change in place\) and waits for its turn/.test(m.message ?? '')), 'a waiting member says what it waits for')

  const done = await eventually('the rollout ends', async () => {
    const s = await rollout('to-b')
    return s.phase === 'Succeeded' || s.phase === 'Halted' ? s : undefined
  }, 90_000)
  t.equal(done.phase, 'Succeeded', done.message ?? '')
  const crs = await fleet()
  t.same(crs.filter((cr) => cr.status?.chartRevision !== nameB || cr.spec.chartRevision !== undefined).map((cr) => cr.metadata.name), [], 'every CR runs B with no pin')
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-b', '-o', 'jsonpath={range .items[*]}{.type} {.reason}{"\\n"}{end}'])
  t.notMatch(events, /HealthGateFailed/)
})
