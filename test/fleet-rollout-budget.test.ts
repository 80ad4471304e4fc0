/**
 * A rollout and the operator's damage budget (reconcile/budget.ts): a rollout that moves more CRs
 * whose change restarts pods than `--max-restarts` allows in a `--budget-window` sees the CRs past
 * the budget wait (Progressing BudgetExhausted, nothing of them applied). The health gate counts
 * them as waiting, not failed — their deadline does not run while the budget holds them — and the
 * Rollout says that its wave waits on the damage budget; once the window has room they move, and
 * the rollout ends as any other. The operator runs as `run --max-restarts 2 --budget-window 6s`.
 */
import pino from 'pino'
import t from 'tap'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { rolloutCRD } from '../operator/api/rollout-crd.ts'
import { revisionName } from '../operator/api/chart-revision.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { startOperator } from '../operator/cli/run.ts'
import { chartFromFiles, loadChart, readChartFiles } from '../operator/render/chart.ts'
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

const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(own), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
t.teardown(() => sandbox.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)
const user = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => user.close())
const operator = await startOperator(
  { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 100, maxRestarts: '2', budgetWindow: '6s' },
  captureIO(),
  pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
)
t.teardown(() => operator.stop())

const fleet = async (): Promise<Cr[]> => (await user.list(MC)).items as unknown as Cr[]
const rollout = async (name: string): Promise<RoStatus> => ((await user.get({ ...RO, name })).status ?? {}) as RoStatus
const waitsOnBudget = (cr: Cr) => cr.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted'

// Six CRs: creating them restarts nothing, so the budget is whole when the rollout starts.
const N = 6
for (let i = 0; i < N; i++) await user.create({ ...MC, metadata: { name: `mc-${i}`, namespace: 'default' }, spec: { size: 1 } })
await eventually('the fleet runs A', async () => ((await fleet()).every((cr) => cr.status?.chartRevision === nameA && cr.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ? true : undefined), 60_000)

t.test('a rollout of more pod restarts than the budget: the CRs past it wait, the gate does not fail them, the Rollout says it waits on the budget, and it succeeds', async (t) => {
  // B: one pod annotation more, so every CR's move restarts its pods.
  const dirB = chartWith({ 'values.yaml': readChartFiles(own.dir).get('values.yaml')!.replace('podAnnotations: {}', 'podAnnotations: {revision: b}') })
  const nameB = revisionName(chartFromFiles(readChartFiles(dirB), dirB))
  t.equal(await runCli(['chart', 'push', dirB, '--kubeconfig', sandbox.kubeconfigPath], captureIO()), 0)
  // A deadline shorter than the budget's window: a CR held by the budget would miss it.
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, maxInFlight: N, healthDeadline: '3s' } }))
  const waiting = await eventually('the wave waits on the budget', async () => {
    const s = await rollout('to-b')
    return s.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted' ? s : undefined
  }, 30_000)
  t.match(waiting.message, /^wave 1\/1 waits on the damage budget: [1-4] of its Memcacheds wait for the operator's budget of pod restarts \(--max-restarts\); their health deadline does not run meanwhile/)
  t.match(waiting.conditions?.find((c) => c.type === 'Progressing'), { status: 'True', message: waiting.message })
  t.ok(waiting.members?.some((m) => m.state === 'moving' && /^waits on the damage budget: the change would restart the pods of Deployment default\/mc-\d/.test(m.message ?? '')), 'a waiting member says what it waits for')
  const held = (await fleet()).filter(waitsOnBudget)
  t.ok(held.length > 0, 'some CRs wait BudgetExhausted')
  t.same(held.filter((cr) => cr.status?.chartRevision !== nameA).map((cr) => cr.metadata.name), [], 'a CR the budget holds still reports the revision its objects run: A')
  t.equal(await kubectl(['get', 'rollout', 'to-b', '-o', 'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}']), 'BudgetExhausted', 'kubectl shows it')

  const done = await eventually('the rollout ends', async () => {
    const s = await rollout('to-b')
    return s.phase === 'Succeeded' || s.phase === 'Halted' ? s : undefined
  }, 60_000)
  t.equal(done.phase, 'Succeeded', done.message ?? '')
  const crs = await fleet()
  t.same(crs.filter((cr) => cr.status?.chartRevision !== nameB || cr.spec.chartRevision !== undefined).map((cr) => cr.metadata.name), [], 'every CR runs B with no pin')
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-b', '-o', 'jsonpath={range .items[*]}{.type} {.reason}{"\\n"}{end}'])
  t.match(events, /^Normal BudgetExhausted$/m, 'an event when the wave began to wait')
  t.notMatch(events, /HealthGateFailed/)
})
