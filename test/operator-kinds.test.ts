/**
 * Kinds a chart declares in kinds.yaml, reconciled against the sandbox with no change to the
 * operator: an extra kind is watched, applied and pruned; an optional kind the cluster does not
 * serve is left out (OptionalKindsServed False, KindNotServed) until its CRD is installed; a
 * declared kind the cluster serves cluster-scoped stops the operator at start.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { loadChart } from '../operator/render/chart.ts'
import { fixtureChart } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { eventually, findObject, operatorWrites, startBed, startOperatorOn } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Condition = { type: string; status: string; reason: string; message: string }
const conditionOf = (cr: KubeObject, type: string) => ((cr.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const crd = YAML.parse(readFileSync(resolve(import.meta.dirname, 'fixtures', 'servicemonitor-crd.yaml'), 'utf8')) as KubeObject

/** Creates the CRD (cluster-scoped: not a kind the test's client resolves) and waits until discovery serves its group-version. */
async function installCrd(c: KubeClient, object: KubeObject): Promise<void> {
  const res = await c.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: object })
  if (res.status !== 201) throw new Error(`CRD not created: ${res.status} ${res.body}`)
  await eventually('the CRD served', async () => ((await c.request({ method: 'GET', path: '/apis/monitoring.coreos.com/v1' })).status === 200 ? true : undefined))
}

t.test('a kind added to kinds.yaml is applied, owned and pruned when no longer rendered', async (t) => {
  const chart = loadChart(fixtureChart('extra-kind'))
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  const cr = await bed.client.create({ ...MC, metadata: { name: 'cache', namespace: 'default' }, spec: { size: 2 } })
  const role = await eventually('the Role', () => findObject(bed.client, 'rbac.authorization.k8s.io/v1', 'Role', 'cache'))
  t.same(role.metadata.ownerReferences, [{ apiVersion: MC.apiVersion, kind: MC.kind, name: 'cache', uid: cr.metadata.uid, controller: true, blockOwnerDeletion: true }])
  t.equal(role.metadata.labels?.['app.kubernetes.io/managed-by'], 'memcached-operator')
  t.equal(bed.metrics.counts['served:rbac.authorization.k8s.io/v1/Role'], 1, 'discovery found it served')
  await eventually('Ready', async () => (conditionOf(await bed.client.get({ ...MC, namespace: 'default', name: 'cache' }), 'Ready')?.status === 'True' ? true : undefined))
  t.notOk(conditionOf(await bed.client.get({ ...MC, namespace: 'default', name: 'cache' }), 'OptionalKindsServed'), 'no optional kind declared: no such condition')

  // Size 1: the template renders no Role, and the operator deletes the one it applied.
  await bed.client.patch({ ...MC, namespace: 'default', name: 'cache' }, { spec: { size: 1 } }, { type: 'merge' })
  await eventually('the Role pruned', async () => ((await findObject(bed.client, 'rbac.authorization.k8s.io/v1', 'Role', 'cache')) ? undefined : true))
  t.ok(operatorWrites(bed.sandbox).some((w) => w.verb === 'delete' && w.resource === 'roles' && w.name === 'cache'), 'deleted by the operator, not by the garbage collector')
  t.equal(bed.metrics.counts['pruned:Role'], 1)
})

t.test('an optional kind the cluster does not serve is left out and the CR says so; once its CRD is installed, it is applied', async (t) => {
  const chart = loadChart(fixtureChart('optional-kind'))
  const bed = await startBed({ chart, discoveryPeriodMs: 100 })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  await bed.client.create({ ...MC, metadata: { name: 'cache', namespace: 'default' }, spec: { size: 2 } })
  const get = () => bed.client.get({ ...MC, namespace: 'default', name: 'cache' })
  const ready = await eventually('Ready', async () => {
    const cr = await get()
    return conditionOf(cr, 'Ready')?.status === 'True' ? cr : undefined
  })
  const left = conditionOf(ready, 'OptionalKindsServed')
  t.equal(left?.status, 'False')
  t.equal(left?.reason, 'KindNotServed')
  t.equal(left?.message, 'not applied, the cluster does not serve their kind: ServiceMonitor cache (the cluster does not serve monitoring.coreos.com/v1)')
  for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) t.ok(await findObject(bed.client, apiVersion, kind, 'cache'), `the rest is applied: ${kind}`)
  const events = async () => (await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as (KubeObject & { type: string; reason: string; message: string })[]
  const warning = await eventually('the KindNotServed event', async () => (await events()).find((e) => e.reason === 'KindNotServed'))
  t.equal(warning.type, 'Warning')
  t.match(warning.message, /ServiceMonitor cache \(the cluster does not serve monitoring\.coreos\.com\/v1\)/)
  t.notOk(operatorWrites(bed.sandbox).some((w) => w.resource === 'servicemonitors'), 'nothing was sent for it')
  t.equal(bed.metrics.counts['served:monitoring.coreos.com/v1/ServiceMonitor'], 0, 'the metric says it is not served')

  // The CRD arrives: the next discovery round starts its informer and the CRs are reconciled again.
  await installCrd(bed.client, crd)
  const monitor = await eventually('the ServiceMonitor', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'cache'), 30_000)
  t.equal(monitor.metadata.ownerReferences?.[0]?.name, 'cache')
  t.same((monitor.spec as { endpoints: unknown }).endpoints, [{ port: 'memcache' }])
  const served = await eventually('OptionalKindsServed True', async () => {
    const c = conditionOf(await get(), 'OptionalKindsServed')
    return c?.status === 'True' ? c : undefined
  })
  t.equal(served.reason, 'AllServed')
  t.equal(bed.metrics.counts['served:monitoring.coreos.com/v1/ServiceMonitor'], 1)
  t.equal(conditionOf(await get(), 'Ready')?.status, 'True')
  await eventually('the AllServed event', async () => (await events()).find((e) => e.reason === 'AllServed' && e.type === 'Normal'))

  // Now watched like any other kind: edited by hand, it is put back.
  await bed.client.patch({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', namespace: 'default', name: 'cache' }, { spec: { endpoints: [{ port: 'other' }] } }, { type: 'merge' })
  await eventually('drift corrected', async () => {
    const m = await findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'cache')
    return (m?.spec as { endpoints?: { port: string }[] } | undefined)?.endpoints?.[0]?.port === 'memcache' ? true : undefined
  })
})

t.test('an optional kind whose CRD is removed while the operator runs is left out again, and applied again once it is back', async (t) => {
  const chart = loadChart(fixtureChart('optional-kind'))
  const bed = await startBed({ chart, discoveryPeriodMs: 100 })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  await installCrd(bed.client, crd)
  await bed.client.create({ ...MC, metadata: { name: 'cache', namespace: 'default' }, spec: { size: 2 } })
  const get = () => bed.client.get({ ...MC, namespace: 'default', name: 'cache' })
  await eventually('the ServiceMonitor', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'cache'), 30_000)
  await eventually('AllServed', async () => (conditionOf(await get(), 'OptionalKindsServed')?.reason === 'AllServed' ? true : undefined))

  // The Prometheus Operator is uninstalled: its CRD and every ServiceMonitor go.
  const res = await bed.client.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name ?? ''}` })
  t.equal(res.status, 200, 'CRD deleted')
  await eventually('discovery no longer serves it', async () => ((await bed.client.request({ method: 'GET', path: '/apis/monitoring.coreos.com/v1' })).status === 404 ? true : undefined))
  // A change of the CR renders the ServiceMonitor again: it is left out, not applied in vain.
  await bed.client.patch({ ...MC, namespace: 'default', name: 'cache' }, { spec: { size: 3 } }, { type: 'merge' })
  const left = await eventually('KindNotServed', async () => {
    const cr = await get()
    const c = conditionOf(cr, 'OptionalKindsServed')
    return cr.status && (cr.status as { observedGeneration?: number }).observedGeneration === cr.metadata.generation && c?.reason === 'KindNotServed' ? cr : undefined
  })
  t.equal(conditionOf(left, 'OptionalKindsServed')?.message, 'not applied, the cluster does not serve their kind: ServiceMonitor cache (the cluster does not serve monitoring.coreos.com/v1)')
  await eventually('Ready', async () => (conditionOf(await get(), 'Ready')?.status === 'True' ? true : undefined))
  t.not(conditionOf(await get(), 'Degraded')?.status, 'True', 'not Degraded: an optional kind may go')
  t.equal(bed.metrics.counts['served:monitoring.coreos.com/v1/ServiceMonitor'], 0, 'the metric says it is no longer served')
  // Its informer is stopped: none left retrying a resource that is gone until the liveness probe
  // counts it stalled (with a threshold below zero, every informer the controller runs is listed).
  const running = bed.controller.stalledInformers(-1)
  t.ok(running.includes('Deployment'), 'the others run')
  t.notOk(running.includes('ServiceMonitor'), 'its informer is gone')

  // Installed again: applied again, as any optional kind that becomes served.
  await installCrd(bed.client, crd)
  await eventually('the ServiceMonitor again', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'cache'), 30_000)
  await eventually('AllServed again', async () => (conditionOf(await get(), 'OptionalKindsServed')?.reason === 'AllServed' ? true : undefined))
  t.equal(bed.metrics.counts['served:monitoring.coreos.com/v1/ServiceMonitor'], 1)
})

t.test('a declared kind the cluster serves cluster-scoped stops the operator at start, naming it', async (t) => {
  const clusterScoped = { ...crd, spec: { ...(crd.spec as object), scope: 'Cluster' } }
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await installCrd(bed.client, clusterScoped)
  const dir = fixtureChart('optional-kind')
  const message = 'monitoring.coreos.com/v1 ServiceMonitor (servicemonitors) is cluster-scoped: a chart may declare only namespaced kinds (kinds.yaml)'
  await t.rejects(startOperatorOn(bed.sandbox, { chart: loadChart(dir) }), { name: 'ClusterScopedKindError', message })
  const io = captureIO()
  const code = await runCli(['run', '--kubeconfig', bed.sandbox.kubeconfigPath, '--chart', dir, '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], io)
  t.equal(code, 1, 'run exits 1, as for a chart that does not load')
  t.equal(io.err(), `error: chart ${dir}: ${message}\n`)
})
