/**
 * Chart revisions end to end, with real kubectl against the sandbox: the operator pushes its own
 * chart as a ChartRevision and records it in status.chartRevision; `chart push` ships another
 * chart without a new operator; a pin (spec.chartRevision) and a promotion (the default label)
 * move CRs to it; a revision that cannot be rendered leaves the CR on what it runs, Degraded.
 */
import pino from 'pino'
import t from 'tap'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { startOperator } from '../operator/cli/run.ts'
import { chartFromFiles, loadChart, readChartFiles } from '../operator/render/chart.ts'
import { revisionName, revisionObject } from '../operator/render/revision.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually } from './support/operator.ts'

const own = loadChart()
const ownName = revisionName(own)
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Status = { chartRevision?: string; conditions?: { type: string; status: string; reason: string; message: string }[] }

const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(own) as unknown as KubeObject, chartRevisionCRD() as unknown as KubeObject] })
t.teardown(() => sandbox.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)
const user = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => user.close())
const operator = await startOperator(
  { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '2', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0' },
  captureIO(),
  pino({ level: 'silent' }),
)
t.teardown(() => operator.stop())

const cli = async (args: string[]) => {
  const io = captureIO()
  const code = await runCli([...args, '--kubeconfig', sandbox.kubeconfigPath], io)
  return { code, out: io.out(), err: io.err() }
}
const status = async (name: string): Promise<Status> => ((await user.get({ ...MC, namespace: 'default', name })).status ?? {}) as Status
const runs = (name: string, revision: string) => eventually(`${name} runs ${revision}`, async () => ((await status(name)).chartRevision === revision ? true : undefined))
const annotation = async (name: string): Promise<string | undefined> => {
  const d = await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name })
  return ((d.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ?? {}).revision
}
const degraded = (name: string, pattern: RegExp) =>
  eventually(`${name} Degraded: ${pattern}`, async () => {
    const c = (await status(name)).conditions?.find((x) => x.type === 'Degraded')
    return c?.status === 'True' && pattern.test(c.message) ? c : undefined
  })

// Revision B: the bundled chart with one pod annotation more, so that what a CR runs is seen on its pods.
const dirB = chartWith({ 'values.yaml': `${readChartFiles(own.dir).get('values.yaml')!.replace('podAnnotations: {}', 'podAnnotations: {revision: b}')}` })
const nameB = revisionName(chartFromFiles(readChartFiles(dirB), dirB))

t.test('the operator pushes its own chart as a ChartRevision, and kubectl lists it', async (t) => {
  const table = await eventually('listed', async () => {
    const out = await kubectl(['get', 'chartrevisions'])
    return out.includes(ownName) ? out : undefined
  })
  t.match(table, /^NAME\s+CHART\s+VERSION\s+DEFAULT\s+AGE/m, 'printer columns')
  t.match(table, new RegExp(`^${ownName}\\s+memcached\\s+${own.version}\\s+\\d+s`, 'm'), 'no DEFAULT: nothing is promoted')
  t.match(ownName, /^memcached-[0-9a-f]{12}$/)
})

t.test('a CR records the revision it runs: the operator\'s own while nothing is promoted', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...MC, metadata: { name: 'a', namespace: 'default' }, spec: { size: 1 } }) + '\n' + JSON.stringify({ ...MC, metadata: { name: 'b', namespace: 'default' }, spec: { size: 1 } }))
  await runs('a', ownName)
  await runs('b', ownName)
  t.equal(await annotation('a'), undefined)
})

t.test('chart push ships a chart as a revision; pushing it again changes nothing', async (t) => {
  const first = await cli(['chart', 'push', dirB])
  t.equal(first.code, 0, first.err)
  t.equal(first.out, `chartrevision.cache.example.com/${nameB} created\n`)
  const again = await cli(['chart', 'push', dirB])
  t.equal(again.code, 0, again.err)
  t.equal(again.out, `chartrevision.cache.example.com/${nameB} unchanged\n`)
  const stored = JSON.parse(await kubectl(['get', 'chartrevision', nameB, '-o', 'json'])) as { spec: { files: Record<string, string>; digest: string } }
  t.match(stored.spec.files['values.yaml'], /podAnnotations: \{revision: b\}/)
  t.match(stored.spec.digest, /^sha256:[0-9a-f]{64}$/)
  t.equal(await annotation('a'), undefined, 'a revision pushed reaches no CR by itself')
})

t.test('a pin moves one CR to a revision; the others stay', async (t) => {
  await kubectl(['patch', 'mc', 'a', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: nameB } })])
  await runs('a', nameB)
  t.equal(await annotation('a'), 'b', 'a\'s pods carry revision B\'s annotation')
  t.equal((await status('b')).chartRevision, ownName)
  t.equal(await annotation('b'), undefined)
})

t.test('chart promote moves every CR without a pin to the revision', async (t) => {
  const r = await cli(['chart', 'promote', nameB])
  t.equal(r.code, 0, r.err)
  t.match(r.out, `chartrevision.cache.example.com/${nameB} promoted`)
  await runs('b', nameB)
  t.equal(await annotation('b'), 'b')
  t.match(await kubectl(['get', 'chartrevision', nameB]), new RegExp(`${nameB}\\s+memcached\\s+\\S+\\s+true`), 'kubectl shows the default')
  // Promoting the operator's own chart back moves the default label: one default at a time.
  const back = await cli(['chart', 'promote', ownName])
  t.equal(back.code, 0, back.err)
  t.match(back.out, `chartrevision.cache.example.com/${nameB} no longer the default`)
  await runs('b', ownName)
  t.equal((await status('a')).chartRevision, nameB, 'the pinned CR stays where it is pinned')
})

t.test('a pin to a revision that does not exist: Degraded, the objects keep running what they ran', async (t) => {
  await kubectl(['patch', 'mc', 'a', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: 'memcached-000000000000' } })])
  const c = await degraded('a', /spec\.chartRevision: ChartRevision "memcached-000000000000" does not exist/)
  t.equal(c.reason, 'InvalidSpec')
  t.equal((await status('a')).chartRevision, nameB, 'status still names the revision the objects run')
  t.equal(await annotation('a'), 'b')
})

t.test('an edited revision (its files no longer hash to its name) is refused, not rendered', async (t) => {
  const forged = revisionObject(own)
  const files = { ...(forged.spec!.files as Record<string, string>), 'values.yaml': 'size: 1\n' }
  await user.create({ ...forged, metadata: { name: 'memcached-0123456789ab' }, spec: { ...forged.spec, digest: `sha256:${'0'.repeat(64)}`, files } } as unknown as KubeObject)
  await kubectl(['patch', 'mc', 'a', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: 'memcached-0123456789ab' } })])
  await degraded('a', /ChartRevision memcached-0123456789ab: its files hash to sha256:[0-9a-f]{64}, not to its spec\.digest/)
  t.equal(await annotation('a'), 'b')
})

t.test('a revision that declares a kind the operator does not watch is refused', async (t) => {
  const dir = chartWith({ 'kinds.yaml': `${readChartFiles(own.dir).get('kinds.yaml')!}  - {apiVersion: batch/v1, kind: Job, resource: jobs}\n` })
  const pushed = await cli(['chart', 'push', dir])
  t.equal(pushed.code, 0, pushed.err)
  const name = revisionName(chartFromFiles(readChartFiles(dir), dir))
  await kubectl(['patch', 'mc', 'a', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: name } })])
  await degraded('a', /declares kinds the operator does not watch \(batch\/v1\/Job\)/)
})

t.test('chart promote of a revision that does not exist is an error; nothing changes', async (t) => {
  const r = await cli(['chart', 'promote', 'memcached-ffffffffffff'])
  t.equal(r.code, 1)
  t.match(r.err, 'ChartRevision "memcached-ffffffffffff" does not exist')
  t.match(await kubectl(['get', 'chartrevision', ownName]), /\strue\s/, 'the default is still the same')
})

t.test('run --default-chart-revision names the default instead of the label', async (t) => {
  await operator.stop()
  const named = await startOperator(
    { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '2', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', defaultChartRevision: nameB },
    captureIO(),
    pino({ level: 'silent' }),
  )
  t.teardown(() => named.stop())
  await runs('b', nameB)
  t.equal(await annotation('b'), 'b')
})

t.test('chart push --promote pushes and promotes at once', async (t) => {
  const r = await cli(['chart', 'push', dirB, '--promote'])
  t.equal(r.code, 0, r.err)
  t.equal(r.out, `chartrevision.cache.example.com/${nameB} unchanged\nchartrevision.cache.example.com/${ownName} no longer the default\nchartrevision.cache.example.com/${nameB} promoted: Memcacheds without spec.chartRevision run it\n`)
})

t.test('on a cluster without the ChartRevision CRD: chart push says so; the operator runs its own chart', async (t) => {
  const bare = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(own) as unknown as KubeObject] })
  t.teardown(() => bare.close())
  const io = captureIO()
  t.equal(await runCli(['chart', 'push', dirB, '--kubeconfig', bare.kubeconfigPath], io), 1)
  t.match(io.err(), 'error: the cluster does not serve ChartRevisions: install their CRD (kubectl apply -k kustomize/crd)')
  const op = await startOperator({ kubeconfig: bare.kubeconfigPath, namespace: [], concurrency: '1', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0' }, captureIO(), pino({ level: 'silent' }))
  t.teardown(() => op.stop())
  const bareUser = clientFor(bare, 'test-user/1', 'test-user')
  t.teardown(() => bareUser.close())
  await bareUser.create({ ...MC, metadata: { name: 'c', namespace: 'default' }, spec: { size: 1, chartRevision: nameB } })
  await eventually('c Degraded', async () => {
    const c = (((await bareUser.get({ ...MC, namespace: 'default', name: 'c' })).status ?? {}) as Status).conditions?.find((x) => x.type === 'Degraded')
    return c?.status === 'True' && /spec\.chartRevision: ChartRevision ".*": the cluster does not serve ChartRevisions/.test(c.message) ? true : undefined
  })
})
