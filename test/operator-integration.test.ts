import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { chartWith } from './support/chart.ts'
import { loadChart } from '../operator/render/chart.ts'
import { clientFor, eventually, operatorWrites, reconcileCount, reconciles, startBed, type Bed, WRITE_VERBS } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const sample = (name: string, spec: Record<string, unknown> = { size: 3 }, namespace = 'default') => ({ ...MC, metadata: { name, namespace }, spec })
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
type Status = { nodes?: string[]; replicas?: number; readyReplicas?: number; selector?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] }
const statusOf = (o: KubeObject) => (o.status ?? {}) as Status
const condition = (o: KubeObject, type: string) => statusOf(o).conditions?.find((c) => c.type === type)
const get = (c: KubeClient, apiVersion: string, kind: string, name: string) => c.get({ apiVersion, kind, namespace: 'default', name })
const exists = async (c: KubeClient, apiVersion: string, kind: string, name: string) => {
  try {
    await get(c, apiVersion, kind, name)
    return true
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return false
    throw err
  }
}

/** Waits until the CR's status reports `size` ready pods for its current generation. */
async function converged(bed: Bed, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} converged at ${size}`, async () => {
    const cr = await getMc(bed.client, name)
    const s = statusOf(cr)
    return s.observedGeneration === cr.metadata.generation && s.nodes?.length === size && (s.readyReplicas ?? 0) === size && s.replicas === size ? cr : undefined
  })
}

t.test('a Memcached becomes a Deployment, a Service and a PDB it owns, and status.nodes lists its pods', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const cr = await bed.client.create(sample('cache'))
  const done = await converged(bed, 'cache', 3)
  const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=cache' })
  t.same(statusOf(done).nodes, pods.items.map((p) => p.metadata.name).sort())
  t.equal(statusOf(done).selector, 'app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached')
  t.equal(condition(done, 'Available')?.status, 'True')
  t.equal(condition(done, 'Degraded')?.status, 'False')
  for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) {
    const child = await get(bed.client, apiVersion, kind, 'cache')
    t.same(child.metadata.ownerReferences, [{ apiVersion: MC.apiVersion, kind: MC.kind, name: 'cache', uid: cr.metadata.uid, controller: true, blockOwnerDeletion: true }], `${kind} is owned`)
  }
  // One server-side apply per object, carrying a fresh uid, which created it (apiserver
  // registry/generic/registry/store.go `Update`, create path) — and nothing else.
  const writes = bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && WRITE_VERBS.has(r.verb) && r.resource !== 'events' && !r.subresource)
  t.same(writes.map((w) => `${w.verb} ${w.patchType} ${w.resource} ${w.code}`).sort(), ['patch apply deployments 201', 'patch apply poddisruptionbudgets 201', 'patch apply services 201'], 'one apply per rendered object, which created it, and nothing else')
  for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) {
    const entries = ((await get(bed.client, apiVersion, kind, 'cache')).metadata.managedFields ?? []) as { manager: string; operation: string }[]
    t.same(entries.filter((e) => e.manager === 'memcached-operator').map((e) => e.operation), ['Apply'], `${kind}: the operator's fields are its Apply entry's only`)
  }
})

t.test('scaling through the CR, through the scale subresource and with kubectl scale', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('scaled', { size: 2 }))
  await converged(bed, 'scaled', 2)
  await bed.client.patch({ ...MC, namespace: 'default', name: 'scaled' }, { spec: { size: 4 } }, { type: 'merge' })
  await converged(bed, 'scaled', 4)
  await promisify(execFile)(kubectlPath(), ['--kubeconfig', bed.sandbox.kubeconfigPath, 'scale', 'memcached/scaled', '--replicas=1'])
  const one = await converged(bed, 'scaled', 1)
  t.equal((one.spec as { size: number }).size, 1)
  await eventually('the PDB pruned at size 1', async () => ((await exists(bed.client, 'policy/v1', 'PodDisruptionBudget', 'scaled')) ? undefined : true))
  t.ok(operatorWrites(bed.sandbox).some((w) => w.verb === 'delete' && w.resource === 'poddisruptionbudgets'), 'pruned by the operator')
  const scale = await bed.client.get({ ...MC, namespace: 'default', name: 'scaled' }, { subresource: 'scale' })
  t.equal((scale.status as { replicas: number }).replicas, 1)
  t.equal((scale.status as { selector: string }).selector, 'app.kubernetes.io/instance=scaled,app.kubernetes.io/name=memcached')
})

t.test('changing a value rolls the Deployment out', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('roll', { size: 2 }))
  await converged(bed, 'roll', 2)
  const before = new Set(statusOf(await getMc(bed.client, 'roll')).nodes)
  // Not memoryMB: a larger one is taken in place where the cluster resizes pods (operator-resize.test.ts).
  await bed.client.patch({ ...MC, namespace: 'default', name: 'roll' }, { spec: { threads: 2 } }, { type: 'merge' })
  const after = await eventually('new pods', async () => {
    const cr = await getMc(bed.client, 'roll')
    const nodes = statusOf(cr).nodes ?? []
    return cr.metadata.generation === statusOf(cr).observedGeneration && nodes.length === 2 && nodes.every((n) => !before.has(n)) && statusOf(cr).readyReplicas === 2 ? cr : undefined
  })
  t.ok(after)
  const dep = await get(bed.client, 'apps/v1', 'Deployment', 'roll')
  const args = (dep.spec as any).template.spec.containers[0].args as string[]
  t.equal(args[args.indexOf('-t') + 1], '2')
})

t.test('drift by another manager is reverted; a foreign annotation is kept', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('drift', { size: 2 }))
  await converged(bed, 'drift', 2)
  const other = clientFor(bed.sandbox, 'kubectl-edit/v1.34', 'kubectl-edit')
  await other.patch(
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'drift' },
    { metadata: { annotations: { 'example.com/owner': 'team-a' } }, spec: { replicas: 5, template: { spec: { containers: [{ name: 'memcached', image: 'memcached:evil' }] } } } },
    { type: 'strategic', fieldManager: 'kubectl-edit' },
  )
  const dep = await eventually('drift reverted', async () => {
    const d = await get(bed.client, 'apps/v1', 'Deployment', 'drift')
    const spec = d.spec as any
    return spec.replicas === 2 && spec.template.spec.containers[0].image === 'memcached:1.6.38-alpine' ? d : undefined
  })
  t.equal(dep.metadata.annotations?.['example.com/owner'], 'team-a', 'a field the operator does not render stays')
  other.close()
})

t.test('deleting the CR garbage-collects its objects', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('gone', { size: 2 }))
  await converged(bed, 'gone', 2)
  await bed.client.delete({ ...MC, namespace: 'default', name: 'gone' })
  await eventually('children collected', async () => {
    for (const [a, k] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) if (await exists(bed.client, a, k, 'gone')) return undefined
    const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=gone' })
    return pods.items.length === 0 ? true : undefined
  })
  t.pass('Deployment, Service, PDB and pods are gone')
})

t.test('an object of the same name owned by someone else is never taken over', async (t) => {
  // It exists before the operator starts, so that its caches hold it when the CR comes (one created
  // just before the CR may still be on its way through the watch: test/operator-no-get.test.ts).
  const before = async (sandbox: Bed['sandbox']) => {
    const other = clientFor(sandbox, 'someone-else/v1', 'someone-else')
    await other.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken', namespace: 'default', labels: { 'app.kubernetes.io/managed-by': 'memcached-operator' } }, spec: { ports: [{ port: 80 }] } }, { fieldManager: 'someone-else' })
    other.close()
  }
  const bed = await startBed({ before })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('taken', { size: 2 }))
  const cr = await eventually('Degraded OwnershipConflict', async () => {
    const c = await getMc(bed.client, 'taken')
    return condition(c, 'Degraded')?.reason === 'OwnershipConflict' ? c : undefined
  })
  t.match(condition(cr, 'Degraded')?.message, /Service default\/taken/)
  t.notOk(await exists(bed.client, 'apps/v1', 'Deployment', 'taken'), 'nothing else of the CR is applied')
  const svc = await get(bed.client, 'v1', 'Service', 'taken')
  t.notOk(((svc.metadata.managedFields ?? []) as { manager: string }[]).some((m) => m.manager === 'memcached-operator'), 'no write by our field manager')
  const events = await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  t.ok(events.items.some((e) => (e as any).reason === 'OwnershipConflict' && (e as any).type === 'Warning' && (e as any).involvedObject.name === 'taken'), 'a Warning event')
})

t.test('an unlabelled object of the same name (found by the uid-guarded apply\'s 422) is not taken over either', async (t) => {
  const before = async (sandbox: Bed['sandbox']) => {
    const other = clientFor(sandbox, 'someone-else/v1', 'someone-else')
    await other.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'theirs', namespace: 'default' }, spec: { replicas: 1, selector: { matchLabels: { app: 'theirs' } }, template: { metadata: { labels: { app: 'theirs' } }, spec: { containers: [{ name: 'app', image: 'their/app:1' }] } } } }, { fieldManager: 'someone-else' })
    other.close()
  }
  const bed = await startBed({ before })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('theirs', { size: 2 }))
  const cr = await eventually('Degraded OwnershipConflict', async () => {
    const c = await getMc(bed.client, 'theirs')
    return condition(c, 'Degraded')?.reason === 'OwnershipConflict' ? c : undefined
  })
  t.match(condition(cr, 'Degraded')?.message, /Deployment default\/theirs/)
  const after = await get(bed.client, 'apps/v1', 'Deployment', 'theirs')
  t.notOk(((after.metadata.managedFields ?? []) as { manager: string }[]).some((m) => m.manager === 'memcached-operator'), 'no write by our field manager')
  t.equal(after.metadata.ownerReferences, undefined, 'no owner added')
  t.equal((after.spec as any).template.spec.containers[0].image, 'their/app:1')
  // Found when its uid-guarded apply was refused: the objects created before it are the CR's own.
  const service = await get(bed.client, 'v1', 'Service', 'theirs')
  t.equal(service.metadata.ownerReferences?.[0]?.uid, (await getMc(bed.client, 'theirs')).metadata.uid, 'the Service created before it is the CR\'s own')
  t.notOk(await exists(bed.client, 'policy/v1', 'PodDisruptionBudget', 'theirs'), 'and nothing after it is created')
})

t.test('a CR the CRD schema rejects is refused by the API server with the field', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const err = await bed.client.create(sample('neg', { size: -1 })).catch((e: unknown) => e)
  t.ok(err instanceof ApiError)
  t.equal((err as ApiError).status, 422)
  t.match((err as ApiError).message, /spec\.size: Invalid value: -1: spec\.size in body should be greater than or equal to 0/)
})

t.test('invalid values: Degraded with the path, a Warning event, nothing applied, previous objects left running', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('bad', { size: 2 }))
  await converged(bed, 'bad', 2)
  const depBefore = await get(bed.client, 'apps/v1', 'Deployment', 'bad')
  bed.sandbox.requests.reset()
  // The CRD cannot say that image is a string or a map; the values schema can.
  await bed.client.patch({ ...MC, namespace: 'default', name: 'bad' }, { spec: { size: 3, image: 42 } }, { type: 'merge' })
  const cr = await eventually('Degraded InvalidSpec', async () => {
    const c = await getMc(bed.client, 'bad')
    return condition(c, 'Degraded')?.reason === 'InvalidSpec' ? c : undefined
  })
  t.match(condition(cr, 'Degraded')?.message, /spec\.image: must be string or object \(got 42\)/)
  const depAfter = await get(bed.client, 'apps/v1', 'Deployment', 'bad')
  t.equal(depAfter.metadata.resourceVersion, depBefore.metadata.resourceVersion, 'the Deployment was not touched')
  t.same(operatorWrites(bed.sandbox).filter((w) => w.resource !== 'events' && w.subresource !== 'status'), [], 'nothing applied')
  t.ok(bed.metrics.counts['failed:InvalidSpec']! >= 1, 'a metric')
})

t.test('a template error: Degraded with template:line, nothing applied', async (t) => {
  const broken = loadChart(chartWith({ 'templates/extra.ejs': '<% if (values.size > 2) fail("size above 2 is not supported here") %>\n' }))
  const bed = await startBed({ chart: broken })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('tpl', { size: 3 }))
  const cr = await eventually('Degraded TemplateError', async () => {
    const c = await getMc(bed.client, 'tpl')
    return condition(c, 'Degraded')?.reason === 'TemplateError' ? c : undefined
  })
  t.match(condition(cr, 'Degraded')?.message, /templates\/extra\.ejs:1: size above 2 is not supported here/)
  t.notOk(await exists(bed.client, 'apps/v1', 'Deployment', 'tpl'))
})

/** Lets the last events settle, forgets the requests so far, then resyncs every CR twice and waits for it. */
async function resyncTwice(bed: Bed, crs: number): Promise<void> {
  await new Promise((r) => setTimeout(r, 300))
  bed.sandbox.requests.reset()
  const before = reconcileCount(bed.metrics)
  bed.controller.enqueueAll()
  await reconciles(bed.metrics, before, crs)
  bed.controller.enqueueAll()
  await reconciles(bed.metrics, before, 2 * crs)
}

t.test('an idle resync of an unchanged cluster makes zero write requests', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  for (const name of ['idle-a', 'idle-b', 'idle-c']) await bed.client.create(sample(name, { size: 2 }))
  for (const name of ['idle-a', 'idle-b', 'idle-c']) await converged(bed, name, 2)
  await resyncTwice(bed, 3)
  t.same(operatorWrites(bed.sandbox), [], 'no write')
  t.equal(bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && r.verb === 'get').length, 0, 'and no GET: reads come from the caches')
})

t.test('an idle resync of a CR that stays broken makes zero write requests too, however long it stays broken', async (t) => {
  // No suppression window: every resync behaves as one coming after the window has passed.
  const bed = await startBed({ eventSuppressMs: 0 })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('broken', { size: 1, image: 42 }))
  await eventually('Degraded InvalidSpec', async () => (condition(await getMc(bed.client, 'broken'), 'Degraded')?.reason === 'InvalidSpec' ? true : undefined))
  await resyncTwice(bed, 1)
  t.same(operatorWrites(bed.sandbox), [], 'no event, no status write')
  t.ok((bed.metrics.counts['failed:InvalidSpec'] ?? 0) >= 3, 'while every reconcile still counts the failure')
})

t.test('after kubectl delete --cascade=orphan, the CR created again adopts its orphans instead of refusing them', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('adopt'))
  await converged(bed, 'adopt', 3)
  const before = await get(bed.client, 'apps/v1', 'Deployment', 'adopt')
  await promisify(execFile)(kubectlPath(), ['--kubeconfig', bed.sandbox.kubeconfigPath, 'delete', 'memcached/adopt', '--cascade=orphan'])
  await eventually('the orphaned Deployment', async () => ((await get(bed.client, 'apps/v1', 'Deployment', 'adopt')).metadata.ownerReferences === undefined ? true : undefined))
  const again = await bed.client.create(sample('adopt'))
  const done = await eventually('adopted and Ready', async () => {
    const cr = await getMc(bed.client, 'adopt')
    return condition(cr, 'Ready')?.status === 'True' && statusOf(cr).observedGeneration === cr.metadata.generation ? cr : undefined
  })
  t.equal(condition(done, 'Degraded')?.reason, 'AsExpected', 'no OwnershipConflict')
  const after = await get(bed.client, 'apps/v1', 'Deployment', 'adopt')
  t.equal(after.metadata.uid, before.metadata.uid, 'the same Deployment, not a new one')
  t.same(after.metadata.ownerReferences?.map((r) => [r.uid, r.controller]), [[again.metadata.uid, true]], 'now controlled by the new CR')
  t.equal(statusOf(done).nodes?.length, 3)
})
