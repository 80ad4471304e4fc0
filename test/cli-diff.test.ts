import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { captureIO } from './support/io.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor, eventually, startBed, startOperatorOn } from './support/operator.ts'
import { fixtureChart } from './support/chart.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')

/** A sandbox without controllers (nothing writes the objects but the operator), the operator on it, and a user's client. */
async function quietBed(t: Test) {
  const sandbox = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const operator = await startOperatorOn(sandbox)
  t.teardown(() => operator.stop())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  return { sandbox, operator, client }
}

t.test('diff: nothing, then what a change would do, then what a chart change would do to every CR', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'memcached-sample', namespace: 'default' }, spec: { size: 3 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  bed.sandbox.requests.reset()

  const none = captureIO()
  t.equal(await runCli(['diff', '-f', sample, ...kc], none), 0, none.err())
  t.equal(none.out(), '')
  t.notOk(bed.sandbox.requests.log().some((r) => r.userAgent?.startsWith('memcached-operator-diff') && ['create', 'update', 'delete'].includes(r.verb)), 'diff writes nothing')
  t.ok(bed.sandbox.requests.log().every((r) => !r.userAgent?.startsWith('memcached-operator-diff') || r.verb !== 'patch' || r.code < 300), 'its applies are dry runs that succeed')

  const some = captureIO()
  // A smaller memoryMB changes the pod template (a larger one alone is taken in place: cli-diff-predict.test.ts).
  t.equal(await runCli(['diff', '-f', sample, ...kc, '--set', 'size=1,memoryMB=32'], some), 1)
  t.match(some.out(), /--- live\/apps\.v1\.Deployment\.default\.memcached-sample\n\+\+\+ merged\/apps\.v1\.Deployment\.default\.memcached-sample\n/)
  t.match(some.out(), /\n-  replicas: 3\n\+  replicas: 1\n/)
  t.match(some.out(), /\n-            - "64"\n\+            - "32"\n/)
  t.match(some.out(), /--- live\/policy\.v1\.PodDisruptionBudget\.default\.memcached-sample\n\+\+\+ merged\/policy\.v1\.PodDisruptionBudget\.default\.memcached-sample\n@@ -1,\d+ \+0,0 @@\n-apiVersion: policy\/v1\n/, 'the PDB would be pruned')
  const dep = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'memcached-sample' })
  t.equal((dep.spec as { replicas: number }).replicas, 3, 'the cluster is unchanged')

  const dir = tempDir('mc-diff-')
  const chart = join(dir, 'chart')
  const { cpSync, readFileSync } = await import('node:fs')
  cpSync(join(root, 'charts/memcached'), chart, { recursive: true })
  writeFileSync(join(chart, 'values.yaml'), readFileSync(join(chart, 'values.yaml'), 'utf8').replace('port: 11211', 'port: 11311'))
  const all = captureIO()
  t.equal(await runCli(['diff', '--all', '--chart', chart, ...kc], all), 1)
  t.match(all.out(), /\n-      port: 11211\n\+      port: 11311\n/)

  // A CR that does not render is reported, and the others are still compared (exit 2: an error).
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'aaa-broken', namespace: 'default' }, spec: { size: 1, image: 42 } })
  const mixed = captureIO()
  t.equal(await runCli(['diff', '--all', '--chart', chart, ...kc], mixed), 2)
  t.match(mixed.err(), /Memcached default\/aaa-broken: spec\.image: must be string or object/)
  t.match(mixed.out(), /\n\+      port: 11311\n/, 'the other CR is still compared')
})

t.test('diff: errors exit 2', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  const bad = join(tempDir('mc-diff-'), 'bad.yaml')
  writeFileSync(bad, 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\nspec: {size: -1}\n')
  const invalid = captureIO()
  t.equal(await runCli(['diff', '-f', bad, ...kc], invalid), 2)
  t.match(invalid.err(), /spec\.size: must be >= 0/)
  for (const args of [['diff'], ['diff', '--all', '-f', sample]]) t.equal(await runCli([...args, ...kc], captureIO()), 2, args.join(' '))
})

t.test('diff: an unreadable kubeconfig is an error (2), not a difference (1)', async (t) => {
  const io = captureIO()
  t.equal(await runCli(['diff', '--all', '--kubeconfig', join(tempDir('mc-diff-'), 'missing')], io), 2)
  t.match(io.err(), /kubeconfig/)
})

t.test('diff --all reads the fleet with one list per kind, not a GET per object, and says the same as diff -f; an object those lists miss is read alone', async (t) => {
  // No controllers: nothing changes the objects between the lists and the dry runs (an object that
  // changed is read again, the test below).
  const { sandbox, operator, client } = await quietBed(t)
  const bed = { sandbox, client }
  const names = ['f-1', 'f-2', 'f-3']
  for (const name of names) await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default' }, spec: { size: 2 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 3 ? true : undefined))
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  // Reads of objects; diff's discovery requests (the platform, as the operator asks it, and whether pods/resize is served, for the larger memoryMB) are GETs without a resource.
  const diffReads = () => bed.sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator-diff') && (r.verb === 'get' || r.verb === 'list'))
  const reads = () => diffReads().filter((r) => r.resource !== '')
  bed.sandbox.requests.reset()
  const all = captureIO()
  t.equal(await runCli(['diff', '--all', '--set', 'memoryMB=128', ...kc], all), 1, all.err())
  t.same(reads().filter((r) => r.verb === 'get'), [], 'no GET')
  t.equal(diffReads().filter((r) => r.resource === '').length, 2, 'two discovery requests: the platform, pods/resize (once for the fleet)')
  t.equal(reads().filter((r) => r.verb === 'list').length, 1 + loadChart().kinds.length, 'the Memcacheds, then one list per kind the chart declares')

  const file = join(tempDir('mc-diff-'), 'fleet.yaml')
  writeFileSync(file, names.map((name) => `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: ${name}, namespace: default}\nspec: {size: 2}\n`).join('---\n'))
  const one = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--set', 'memoryMB=128', ...kc], one), 1, one.err())
  t.equal(all.out(), one.out(), 'the same differences as object by object')

  // Somebody else's Service where f-3's was: not in the operator's lists, so read alone (and a
  // conflict, as the operator would report it).
  await operator.stop()
  await bed.client.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'f-3' })
  await bed.client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'f-3', namespace: 'default' }, spec: { clusterIP: 'None', selector: { app: 'other' }, ports: [{ name: 'http', port: 80 }] } })
  bed.sandbox.requests.reset()
  const foreign = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc], foreign), 1, foreign.err())
  t.same(reads().filter((r) => r.verb === 'get').map((r) => `${r.resource}/${r.name}`), ['services/f-3'])
  t.match(foreign.err(), /Memcached default\/f-3: Service default\/f-3 exists and has no controller; it was not created by this Memcached and is left alone \(the operator would report OwnershipConflict\)/, 'judged by what is really there: somebody else\'s, which the operator leaves alone')
  t.notMatch(foreign.out(), /v1\.Service\.default\.f-3/, 'no diff of an object the apply would not touch')
})

t.test('diff: an object that changed between its read and its dry run (a status the controllers wrote) is read again: the diff is of the apply alone', async (t) => {
  const { sandbox, operator, client } = await quietBed(t)
  await client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'memcached-sample', namespace: 'default' }, spec: { size: 3 } })
  await eventually('applied', async () => ((await client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  await operator.stop()
  // Just before the diff's first dry run of the Deployment arrives, the Deployment's status moves on.
  const cluster = sandbox.cluster
  const dispatch = cluster.dispatch.bind(cluster)
  let moved = 0
  let ready = 0
  cluster.dispatch = async (req, mode) => {
    if (moved === 0 && req.verb === 'patch' && req.resource === 'deployments' && req.query.getAll('dryRun').includes('All')) {
      moved++
      ready++
      const status = { observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: ready, availableReplicas: ready }
      const r = await cluster.handle({ verb: 'patch', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'status', namespace: 'default', name: 'memcached-sample', query: new URLSearchParams(), contentType: 'application/merge-patch+json', body: { status } } as Parameters<typeof cluster.handle>[0])
      t.equal(r.status, 200, 'the status moved on')
    }
    return dispatch(req, mode)
  }
  t.teardown(() => void (cluster.dispatch = dispatch))
  for (const args of [['-f', sample], ['--all']]) {
    moved = 0
    sandbox.requests.reset()
    const io = captureIO()
    t.equal(await runCli(['diff', ...args, '--kubeconfig', sandbox.kubeconfigPath], io), 0, `${args[0]}: no difference (${io.out()})`)
    t.equal(io.out(), '')
    t.equal(moved, 1)
    const gets = sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator-diff') && r.verb === 'get' && r.resource === 'deployments')
    t.equal(gets.length, args[0] === '--all' ? 1 : 2, 'the Deployment read again once')
  }
})

t.test('diff with an optional kind the cluster does not serve: left out as the operator leaves it, and said so', async (t) => {
  const dir = fixtureChart('optional-kind')
  const bed = await startBed({ chart: loadChart(dir) })
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'memcached-sample', namespace: 'default' }, spec: { size: 3 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  for (const args of [['--all'], ['-f', sample]]) {
    const io = captureIO()
    t.equal(await runCli(['diff', ...args, '--chart', dir, '--kubeconfig', bed.sandbox.kubeconfigPath], io), 0, `${args[0]}: no difference (${io.err()})`)
    t.equal(io.out(), '')
    t.match(io.err(), /ServiceMonitor default\/memcached-sample: not applied, the cluster does not serve monitoring\.coreos\.com\/v1 ServiceMonitor \(optional in kinds\.yaml\)/)
    const json = captureIO()
    t.equal(await runCli(['diff', ...args, '--chart', dir, '--kubeconfig', bed.sandbox.kubeconfigPath, '-o', 'json'], json), 0, json.err())
    const monitor = (JSON.parse(json.out()) as { memcacheds: { objects: { kind: string; action: string; reason?: string }[] }[] }).memcacheds[0]!.objects.find((o) => o.kind === 'ServiceMonitor')
    t.same(monitor && { action: monitor.action, reason: monitor.reason }, { action: 'omit', reason: 'the cluster does not serve monitoring.coreos.com/v1 ServiceMonitor' }, 'left out, in the summary too')
  }
})
