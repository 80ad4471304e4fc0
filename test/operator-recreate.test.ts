/**
 * Fields the API server will not change in place (a Service's cluster IP, a Deployment's
 * selector): the operator deletes and re-creates the object, once per render, only when it
 * controls it and the chart has not opted out — against the sandbox, which refuses and keeps
 * them as kube-apiserver does.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { fakeCr, fakeReconciler, stamped } from './support/fake-reconciler.ts'
import { eventually, operatorWrites, startBed, startOperatorOn, clientFor, type Bed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const SVC = { apiVersion: 'v1', kind: 'Service', namespace: 'default' } as const
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default' } as const
type Condition = { type: string; status: string; reason: string; message: string }
type Status = { observedGeneration?: number; readyReplicas?: number; nodes?: string[]; conditions?: Condition[] }
const statusOf = (o: KubeObject) => (o.status ?? {}) as Status
const condition = (o: KubeObject, type: string) => statusOf(o).conditions?.find((c) => c.type === type)
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const sample = (name: string, spec: Record<string, unknown>) => ({ ...MC, metadata: { name, namespace: 'default' }, spec })

/** Waits until the CR is Ready for its current generation with `size` ready pods. */
async function ready(c: KubeClient, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} ready`, async () => {
    const cr = await getMc(c, name)
    const s = statusOf(cr)
    return s.observedGeneration === cr.metadata.generation && s.readyReplicas === size && s.nodes?.length === size && condition(cr, 'Ready')?.status === 'True' ? cr : undefined
  })
}

/** Every Progressing condition the CR shows from now on (a watch sees each status write). */
function progressingHistory(c: KubeClient, name: string, resourceVersion: string | undefined): { seen: Condition[]; stop: () => void } {
  const seen: Condition[] = []
  const stop = c.watch(
    MC,
    { namespace: 'default', fieldSelector: `metadata.name=${name}`, resourceVersion },
    (e) => {
      const p = e.type === 'MODIFIED' ? condition(e.object, 'Progressing') : undefined
      if (p && (seen.length === 0 || seen[seen.length - 1]?.reason !== p.reason)) seen.push(p)
    },
    () => {},
  )
  return { seen, stop }
}

async function events(c: KubeClient, reason: string, name: string): Promise<{ type: string; message: string }[]> {
  const list = await c.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  return (list.items as unknown as { reason: string; type: string; message: string; involvedObject: { name: string } }[]).filter((e) => e.reason === reason && e.involvedObject.name === name)
}

const deletes = (bed: { sandbox: Bed['sandbox'] }, resource: string) => operatorWrites(bed.sandbox).filter((w) => w.verb === 'delete' && w.resource === resource)

/** Switches `service.headless` on a converged CR and checks the Service is re-created and the CR converges again. */
async function switchHeadless(t: Test, from: boolean): Promise<void> {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const name = from ? 'hl-off' : 'hl-on'
  await bed.client.create(sample(name, { size: 2, service: { headless: from } }))
  const before = await ready(bed.client, name, 2)
  const old = await bed.client.get({ ...SVC, name })
  t.equal((old.spec as { clusterIP: string }).clusterIP === 'None', from)
  const history = progressingHistory(bed.client, name, before.metadata.resourceVersion)
  t.teardown(history.stop)
  await bed.client.patch({ ...MC, namespace: 'default', name }, { spec: { service: { headless: !from } } }, { type: 'merge' })

  const svc = await eventually('the Service re-created', async () => {
    const s = await bed.client.get({ ...SVC, name }).catch(() => undefined)
    return s && s.metadata.uid !== old.metadata.uid ? s : undefined
  })
  t.equal((svc.spec as { clusterIP: string }).clusterIP === 'None', !from, `headless is ${!from} now`)
  t.equal(svc.metadata.ownerReferences?.[0]?.uid, before.metadata.uid, 'owned by the CR')
  const after = await ready(bed.client, name, 2)
  t.equal(condition(after, 'Progressing')?.reason, 'RolloutComplete')
  t.equal(condition(after, 'Degraded')?.reason, 'AsExpected')
  // The watch delivers the status writes from `before` on, possibly after `ready` saw the last one.
  const recreatedThenComplete = () => {
    const reasons = history.seen.map((c) => c.reason)
    return reasons.indexOf('Recreated') >= 0 && reasons.lastIndexOf('RolloutComplete') > reasons.indexOf('Recreated')
  }
  await eventually('the watch to see Progressing Recreated, then RolloutComplete', () => (recreatedThenComplete() ? true : undefined)).catch(() => {})
  t.ok(recreatedThenComplete(), `Progressing Recreated, then RolloutComplete (${history.seen.map((c) => c.reason).join(' → ')})`)
  t.match(history.seen.find((c) => c.reason === 'Recreated'), { status: 'True', message: new RegExp(`Service default/${name}: .*${from ? 'headless' : 'may not change once set'}`) })
  const recreated = await eventually('the Recreated event', async () => {
    const list = await events(bed.client, 'Recreated', name)
    return list.length > 0 ? list : undefined
  })
  t.equal(recreated.length, 1, 'one Recreated event')
  t.match(recreated[0], { type: 'Normal', message: new RegExp(`Service default/${name} \\(spec\\.clusterIPs?(\\[0\\])? cannot change in place\\)`) })
  t.equal(deletes(bed, 'services').length, 1, 'one delete')
}

t.test('headless false→true on a live CR: the Service is re-created as headless and the CR converges', async (t) => {
  await switchHeadless(t, false)
})

t.test('headless true→false on a live CR: the kept clusterIP None is seen, the Service is re-created with a cluster IP and the CR converges', async (t) => {
  await switchHeadless(t, true)
})

t.test('renaming the chart re-creates the Deployment with the new selector on every instance', async (t) => {
  const chart = loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  const first = await startOperatorOn(sandbox, { chart })
  for (const name of ['one', 'two']) await client.create(sample(name, { size: 2 }))
  for (const name of ['one', 'two']) await ready(client, name, 2)
  const old = new Map<string, string | undefined>()
  for (const name of ['one', 'two']) old.set(name, (await client.get({ ...DEPLOY, name })).metadata.uid)
  await first.stop()

  const yaml = readFileSync(join(DEFAULT_CHART_DIR, 'Chart.yaml'), 'utf8').replace(/^name: memcached$/m, 'name: cache')
  const renamed = loadChart(chartWith({ 'Chart.yaml': yaml }))
  t.equal(renamed.name, 'cache')
  const second = await startOperatorOn(sandbox, { chart: renamed })
  t.teardown(() => second.stop())
  for (const name of ['one', 'two']) {
    const d = await eventually(`${name}'s Deployment re-created`, async () => {
      const o = await client.get({ ...DEPLOY, name }).catch(() => undefined)
      return o && o.metadata.uid !== old.get(name) ? o : undefined
    })
    t.same((d.spec as { selector: unknown }).selector, { matchLabels: { 'app.kubernetes.io/name': 'cache', 'app.kubernetes.io/instance': name } })
    const cr = await ready(client, name, 2)
    t.equal(condition(cr, 'Degraded')?.reason, 'AsExpected')
    const recreated = await eventually(`${name}'s Recreated event`, async () => {
      const list = await events(client, 'Recreated', name)
      return list.length > 0 ? list : undefined
    })
    t.match(recreated, [{ type: 'Normal', message: new RegExp(`Deployment default/${name} \\(spec\\.selector cannot change in place\\)`) }])
  }
  t.equal(deletes({ sandbox }, 'deployments').length, 2, 'one delete per instance')
})

t.test('an immutable ConfigMap whose data changes is re-created with the new data (core/validation ValidateConfigMapUpdate refuses it in place)', async (t) => {
  const template = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: <%= fullname() + "-settings" %>', 'immutable: true', 'data:', '  size: <%= String(values.size) %>', ''].join('\n')
  const bed = await startBed({ chart: loadChart(chartWith({ 'templates/configmap.ejs': template })) })
  t.teardown(() => bed.stop())
  const CM = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'frozen-settings' } as const
  await bed.client.create(sample('frozen', { size: 1 }))
  await ready(bed.client, 'frozen', 1)
  const old = await bed.client.get(CM)
  t.same(old.data, { size: '1' })
  await bed.client.patch({ ...MC, namespace: 'default', name: 'frozen' }, { spec: { size: 2 } }, { type: 'merge' })
  const cr = await ready(bed.client, 'frozen', 2)
  const now = await bed.client.get(CM)
  t.not(now.metadata.uid, old.metadata.uid, 'a new ConfigMap')
  t.same(now.data, { size: '2' })
  t.equal(condition(cr, 'Degraded')?.reason, 'AsExpected')
  t.match(await events(bed.client, 'Recreated', 'frozen'), [{ type: 'Normal', message: /ConfigMap default\/frozen-settings \(data cannot change in place\)/ }])
  t.equal(deletes(bed, 'configmaps').length, 1)
})

t.test('an object opted out with the recreate annotation is not deleted: the CR is Degraded ImmutableField with the server’s message', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const spec = { size: 1, service: { headless: false, annotations: { 'memcached-operator.cache.example.com/recreate': 'never' } } }
  await bed.client.create(sample('kept', spec))
  await ready(bed.client, 'kept', 1)
  const old = await bed.client.get({ ...SVC, name: 'kept' })
  await bed.client.patch({ ...MC, namespace: 'default', name: 'kept' }, { spec: { service: { headless: true } } }, { type: 'merge' })
  const cr = await eventually('Degraded ImmutableField', async () => {
    const o = await getMc(bed.client, 'kept')
    return condition(o, 'Degraded')?.reason === 'ImmutableField' ? o : undefined
  })
  t.equal(condition(cr, 'Degraded')?.status, 'True')
  t.match(condition(cr, 'Degraded')?.message, 'Service default/kept: Service "kept" is invalid: spec.clusterIPs[0]: Invalid value: ["None"]: may not change once set (not re-created: its annotation memcached-operator.cache.example.com/recreate is "never"')
  t.match(await events(bed.client, 'ImmutableField', 'kept'), [{ type: 'Warning' }])
  t.equal((await bed.client.get({ ...SVC, name: 'kept' })).metadata.uid, old.metadata.uid, 'the same Service')
  t.same(deletes(bed, 'services'), [], 'no delete')
  t.same(await events(bed.client, 'Recreated', 'kept'), [])
})

t.test('a foreign object is never deleted: an adopted orphan the server refuses to change stays, the CR says why', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('orphan', { size: 1, service: { headless: false } }))
  await ready(bed.client, 'orphan', 1)
  const old = await bed.client.get({ ...SVC, name: 'orphan' })
  await bed.client.delete({ ...MC, namespace: 'default', name: 'orphan' }, { propagationPolicy: 'Orphan' })
  await eventually('the CR gone, its Service orphaned', async () => {
    const gone = await getMc(bed.client, 'orphan').then(() => false, (err) => err instanceof ApiError && err.status === 404)
    const svc = await bed.client.get({ ...SVC, name: 'orphan' })
    return gone && (svc.metadata.ownerReferences ?? []).length === 0 ? true : undefined
  })
  // The same CR again, now headless: the orphan is adopted by an apply the server refuses.
  await bed.client.create(sample('orphan', { size: 1, service: { headless: true } }))
  const cr = await eventually('Degraded ImmutableField', async () => {
    const o = await getMc(bed.client, 'orphan')
    return condition(o, 'Degraded')?.reason === 'ImmutableField' ? o : undefined
  })
  t.match(condition(cr, 'Degraded')?.message, /^Service default\/orphan: Service "orphan" is invalid: spec\.clusterIPs\[0\]: .*may not change once set \(not re-created: this Memcached does not control it\)$/)
  t.equal((await bed.client.get({ ...SVC, name: 'orphan' })).metadata.uid, old.metadata.uid, 'the same Service')
  t.same(deletes(bed, 'services'), [], 'no delete')
})

t.test('a second identical refusal after a re-creation does not delete again: Degraded ImmutableField until the render changes', async (t) => {
  // A server (or a webhook) that refuses every change of the Service once it exists: the
  // re-created object is refused too, on the next drift.
  const cr = fakeCr('loop')
  const stored = new Map<string, KubeObject>()
  const calls: string[] = []
  let n = 0
  const refusal = () => new ApiError(422, 'Invalid', 'Service "loop" is invalid: spec.clusterIPs[0]: Invalid value: ["None"]: may not change once set', { causes: [{ reason: 'FieldValueInvalid', field: 'spec.clusterIPs[0]', message: 'Invalid value: ["None"]: may not change once set' }] })
  const client = {
    async get(ref: { kind: string; name: string }) {
      const o = stored.get(ref.kind)
      if (!o) throw new ApiError(404, 'NotFound', `${ref.kind} "${ref.name}" not found`)
      return o
    },
    async apply(obj: KubeObject, opts: { subresource?: string }) {
      if (opts.subresource === 'status') return { ...cr, status: obj.status }
      calls.push(`apply ${obj.kind}`)
      const there = stored.get(obj.kind)
      // As kube-apiserver: a uid the object does not have is refused (rest/update.go BeforeUpdate).
      if (there && obj.metadata.uid !== undefined && obj.metadata.uid !== there.metadata.uid) throw new ApiError(422, 'Invalid', `${obj.kind} "loop" is invalid: metadata.uid: Invalid value: "${obj.metadata.uid}": field is immutable`, { causes: [{ reason: 'FieldValueInvalid', field: 'metadata.uid', message: `Invalid value: "${obj.metadata.uid}": field is immutable` }] })
      if (obj.kind === 'Service' && there) throw refusal()
      stored.set(obj.kind, stamped(obj, ++n))
      return stored.get(obj.kind)
    },
    async delete(ref: { kind: string }, opts: { preconditions?: { uid?: string } }) {
      calls.push(`delete ${ref.kind} ${opts.preconditions?.uid}`)
      stored.delete(ref.kind)
      return { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Success' }
    },
  } as unknown as KubeClient
  const { reconciler, recorded } = fakeReconciler({ cr, client, stored })
  const log = pino({ level: 'silent' })
  await reconciler.reconcile('default', 'loop', log) // creates everything
  const first = stored.get('Service')?.metadata.uid
  await reconciler.reconcile('default', 'loop', log) // refused: deleted and re-created
  t.same(calls.filter((c) => c.startsWith('delete')), [`delete Service ${first}`], 'deleted once, on its uid')
  t.ok(recorded.some((r) => r.startsWith('Normal Recreated:')))
  await t.rejects(reconciler.reconcile('default', 'loop', log), { name: 'ReconcileError', message: /not re-created: it was already re-created for this render/ })
  await t.rejects(reconciler.reconcile('default', 'loop', log), { name: 'ReconcileError' })
  t.equal(calls.filter((c) => c.startsWith('delete')).length, 1, 'never deleted again for the same render')
  t.ok(recorded.some((r) => r.startsWith('Warning ImmutableField:')))
})
