/**
 * A rollout moves at the fleet's pace, not the poll's: a change of a Memcached the operator's
 * cache sees (its status, written as its reconcile ends) brings the rollout's next pass forward
 * (RolloutController.kick), as controller-runtime's watches requeue a controller. The poll here is
 * ten minutes, far longer than the test may wait: a rollout that steps only when polled would not
 * get past its first pass.
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
import { startFleetBed } from './support/fleet.ts'
import { clientFor, eventually } from './support/operator.ts'

const own = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const RO = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout' } as const
type Cr = { metadata: { name: string }; spec: { chartRevision?: string }; status?: { chartRevision?: string; conditions?: { type: string; status: string }[] } }

t.test('with a ten-minute poll, a rollout of two waves and a bake still runs to its end: each step taken when the fleet changed, the next wave when one ended, the bake ended at its time', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(own), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const nameA = revisionName(own)
  for (const name of ['mc-0', 'mc-1', 'mc-2', 'mc-3']) await user.create({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: 1 } })
  const dirB = chartWith({ 'values.yaml': readChartFiles(own.dir).get('values.yaml')!.replace('podAnnotations: {}', 'podAnnotations: {revision: b}') })
  const nameB = revisionName(chartFromFiles(readChartFiles(dirB), dirB))
  t.equal(await runCli(['chart', 'push', dirB, '--kubeconfig', sandbox.kubeconfigPath], captureIO()), 0)
  // The Rollout is there before the operator starts: its first pass (at start) finds it.
  await user.create({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, waves: [{ percent: 50 }, { percent: 100 }], maxInFlight: 1, bakeTime: '1s' } })

  const operator = await startOperator(
    { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 600_000 },
    captureIO(),
    pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  )
  t.teardown(() => operator.stop())
  const done = await eventually('the rollout to succeed', async () => {
    const s = (await user.get({ ...RO, name: 'to-b' })).status as { phase?: string; message?: string } | undefined
    return s?.phase === 'Succeeded' || s?.phase === 'Halted' ? s : undefined
  }, 60_000)
  t.equal(done.phase, 'Succeeded', done.message ?? '')
  const crs = (await user.list(MC)).items as unknown as Cr[]
  t.same(crs.map((cr) => [cr.metadata.name, cr.status?.chartRevision, cr.spec.chartRevision]), ['mc-0', 'mc-1', 'mc-2', 'mc-3'].map((n) => [n, nameB, undefined]), 'every CR runs B, unpinned')
  t.not(nameA, nameB)
})

t.test('with no rollout in progress, a fleet that converges draws no list of Rollouts beyond the polls: a Memcached\'s change moves nothing then', async (t) => {
  // Before, each of the fleet's status writes brought a pass (a list of Rollouts) forward to 200 ms after the last.
  const { sandbox, createFleet } = await startFleetBed(t, { sandbox: { requestLogSize: 100_000 }, flags: { rolloutPollMs: 600_000 } })
  await createFleet(8)
  await new Promise((r) => setTimeout(r, 500))
  const lists = sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator/') && r.verb === 'list' && r.resource === 'rollouts')
  t.equal(lists.length, 1, 'the pass at start, alone')
  const writes = sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator/') && r.resource === 'memcacheds' && r.subresource === 'status')
  t.ok(writes.length >= 8, `the fleet's status writes were seen (${writes.length})`)
})
