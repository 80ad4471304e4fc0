/**
 * A rollout reads the fleet from the operator's Memcached cache, not from a list of every
 * Memcached at each pass (a pass comes every poll period while it progresses): the cache keeps, of
 * each CR's managedFields, the owners of spec.chartRevision, which is how a person's pin is told
 * from the rollout's own.
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
import { memcachedSummary } from '../operator/reconcile/cache-summary.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually } from './support/operator.ts'

const own = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const RO = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout' } as const

t.test('the cached Memcached keeps of its managedFields only who owns spec.chartRevision, reduced to that field', async (t) => {
  const cr = {
    ...MC,
    metadata: {
      name: 'a',
      managedFields: [
        { manager: 'kubectl', operation: 'Apply', apiVersion: 'cache.example.com/v1alpha1', fieldsV1: { 'f:spec': { 'f:size': {}, 'f:chartRevision': {} } } },
        { manager: 'memcached-operator', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:nodes': {} } } },
        { manager: 'someone', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': {} } } },
      ],
    },
    spec: { size: 1, chartRevision: 'memcached-0123456789ab' },
  } as unknown as KubeObject
  t.same(memcachedSummary(cr).metadata.managedFields, [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:chartRevision': {} } } }])
  const unpinned = { ...cr, metadata: { ...cr.metadata, managedFields: (cr.metadata.managedFields as unknown[]).slice(1, 2) } } as KubeObject
  t.notOk('managedFields' in memcachedSummary(unpinned).metadata, 'none kept when nobody owns the pin')
})

t.test('while a rollout progresses it lists no Memcached, and still holds the CR a person pinned', async (t) => {
  // A request log that holds the whole test: the count below is read from it.
  const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 1_000_000, installCRDs: [memcachedCRD(own), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const operator = await startOperator(
    { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 50 },
    captureIO(),
    pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  )
  t.teardown(() => operator.stop())
  const nameA = revisionName(own)
  for (const name of ['mc-0', 'mc-1', 'mc-2']) await user.create({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: 1 } })
  // A person pins mc-2 to the revision it runs: the rollout must hold it.
  await user.apply({ ...MC, metadata: { name: 'mc-2', namespace: 'default' }, spec: { chartRevision: nameA } }, { fieldManager: 'a-person' })
  const crs = async () => (await user.list(MC)).items as unknown as { metadata: { name: string }; status?: { chartRevision?: string } }[]
  await eventually('the fleet runs A', async () => ((await crs()).every((cr) => cr.status?.chartRevision === nameA) ? true : undefined), 60_000)

  const values = readChartFiles(own.dir).get('values.yaml')!
  const dirB = chartWith({ 'values.yaml': values.replace('podAnnotations: {}', 'podAnnotations: {revision: b}') })
  const nameB = revisionName(chartFromFiles(readChartFiles(dirB), dirB))
  t.equal(await runCli(['chart', 'push', dirB, '--kubeconfig', sandbox.kubeconfigPath], captureIO()), 0)
  // The operator's lists of Memcacheds (its informer starts from a watch-list: no list at all).
  const lists = () => sandbox.requests.log().filter((r) => r.verb === 'list' && r.resource === 'memcacheds' && r.userAgent?.startsWith('memcached-operator/')).length
  const before = lists()
  // A bake time keeps the rollout progressing through some tens of passes.
  await user.create({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, bakeTime: '2s', healthDeadline: '60s' } })
  const status = async () => ((await user.get({ ...RO, name: 'to-b' })).status ?? {}) as { phase?: string; held?: { memcached: string; reason: string }[] }
  await eventually('the rollout ends', async () => (['Succeeded', 'Halted', 'Failed'].includes((await status()).phase ?? '') ? true : undefined), 60_000)
  const s = await status()
  t.equal(s.phase, 'Succeeded')
  t.same(s.held, [{ memcached: 'default/mc-2', reason: `pinned to ${nameA} by a-person` }], 'the person\'s pin, seen through the cache')
  const byName = Object.fromEntries((await crs()).map((cr) => [cr.metadata.name, cr.status?.chartRevision]))
  t.same(byName, { 'mc-0': nameB, 'mc-1': nameB, 'mc-2': nameA })
  t.equal(lists() - before, 0, 'the operator listed no Memcached while it ran')
})
