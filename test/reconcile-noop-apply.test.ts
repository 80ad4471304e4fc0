/**
 * An apply the server answers without a change is no update: a mutating admission webhook that
 * rewrites a field (a registry mirror rewriting the image) makes the rendered object differ from
 * the live one for every process that has not applied it yet, so a new process applies once
 * (its applied memory is its own); the server writes nothing (kube-apiserver skips a no-op
 * update, the resourceVersion stays) and the operator must not log, count or announce an update.
 */
import { Writable } from 'node:stream'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { createLogger } from '../operator/controller/log.ts'
import { loadChart } from '../operator/render/chart.ts'
import { MemcachedController } from '../operator/reconcile/controller.ts'
import { unchangedByApply } from '../operator/reconcile/reconciler.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor, CountingMetrics, eventually } from './support/operator.ts'

const chart = loadChart()
const MIRROR = 'mirror.example.com/'

type Containers = { spec: { template: { spec: { containers: { image: string }[] } } } }

t.test('a process that re-applies an object a webhook rewrote reports no update', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  sandbox.cluster.mutatingWebhooks.push((obj, req) => {
    if (req.resource !== 'deployments') return
    for (const c of (obj as unknown as Containers).spec.template.spec.containers) if (!c.image.startsWith(MIRROR)) c.image = MIRROR + c.image
  })
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())

  const run = async (name: string) => {
    const client = clientFor(sandbox, `memcached-operator/${name}`)
    const logs: string[] = []
    const destination = new Writable({ write: (chunk: Buffer, _e, done) => (logs.push(...chunk.toString('utf8').split('\n').filter(Boolean)), done()) })
    const metrics = new CountingMetrics()
    const controller = new MemcachedController({ client, chart: () => chart, namespaces: [], concurrency: 1, resyncPeriodMs: 600_000, log: createLogger({ level: 'debug', destination }), metrics })
    await controller.start()
    controller.runWorkers()
    const stop = async () => {
      await controller.stop()
      client.close()
    }
    t.teardown(stop)
    return { logs, metrics, stop, ua: `memcached-operator/${name}` }
  }

  const first = await run('first')
  await user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: 'default' }, spec: { size: 1 } })
  const ready = async () => {
    const cr = await user.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'cache' })
    return ((cr.status ?? {}) as { conditions?: { type: string; status: string }[] }).conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined
  }
  await eventually('Ready', ready)
  // The Deployment controller may still write the status (its Progressing reason) after the CR is
  // Ready: wait until the Deployment says the rollout is complete and stays unwritten.
  const getDep = () => user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'cache' })
  const dep = await eventually('the Deployment settled', async () => {
    const d = await getDep()
    const complete = ((d.status ?? {}) as { conditions?: { type: string; reason?: string }[] }).conditions?.some((c) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable')
    if (!complete) return undefined
    await new Promise((r) => setTimeout(r, 300))
    const again = await getDep()
    return again.metadata.resourceVersion === d.metadata.resourceVersion ? again : undefined
  })
  t.ok((dep as unknown as Containers).spec.template.spec.containers.every((c) => c.image.startsWith(MIRROR)), 'the webhook rewrote the image')
  await first.stop()

  const events = async () => (await user.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items.filter((e) => (e as { reason?: string }).reason === 'Updated').map((e) => `${(e as { count?: number }).count ?? 1} ${(e as { message?: string }).message}`)
  const before = await events()
  const second = await run('second')
  const applies = () => sandbox.requests.log().filter((r) => r.userAgent === second.ua && r.verb === 'patch' && r.resource === 'deployments')
  await eventually('the new process applies the Deployment once', () => (applies().length > 0 && (second.metrics.counts['reconciled:success'] ?? 0) > 0 ? true : undefined))
  t.equal(applies()[0]?.code, 200)
  const after = await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'cache' })
  t.equal(after.metadata.resourceVersion, dep.metadata.resourceVersion, 'the server changed nothing')
  t.same(second.logs.filter((l) => /"msg":"updated"/.test(l)), [], 'no "updated" log line')
  t.ok(second.logs.some((l) => /"msg":"apply changed nothing"/.test(l) && /Deployment default\/cache/.test(l)), 'a debug line says the apply changed nothing')
  t.same(await events(), before, 'no new or repeated Updated event')
  t.equal(second.metrics.counts['applied:Deployment'], undefined, 'not counted as an apply that changed something')
  t.equal(second.metrics.counts['unchanged:Deployment'], 1, 'counted as an unchanged apply')
  t.equal(await ready(), true, 'still Ready')
})

t.test('the sandbox, as kube-apiserver, does not store an apply a webhook turned back into the stored object, though its managedFields time moved (fieldmanager.IgnoreManagedFieldsTimestampsTransformer)', async (t) => {
  const sandbox = await startSandbox({ controllers: false })
  t.teardown(() => sandbox.close())
  sandbox.cluster.mutatingWebhooks.push((obj, req) => {
    const data = (obj as { data?: Record<string, string> }).data
    if (req.resource === 'configmaps' && data?.image !== undefined) data.image = data.image.replace(/^(?!mirror\/)/, 'mirror/')
  })
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const cm = (data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data }) as KubeObject
  const first = (await user.applyObject(cm({ image: 'memcached:1.6' }), { fieldManager: 'test-user', force: true })).object
  t.equal((first as { data?: Record<string, string> }).data?.image, 'mirror/memcached:1.6')
  const second = Math.ceil(Date.now() / 1000) * 1000 + 50
  await new Promise((r) => setTimeout(r, second - Date.now()))
  const again = (await user.applyObject(cm({ image: 'memcached:1.6' }), { fieldManager: 'test-user', force: true })).object
  t.equal(again.metadata.resourceVersion, first.metadata.resourceVersion, 'a second later: nothing stored, the managedFields time kept')
  t.same(again.metadata.managedFields, first.metadata.managedFields)
  const changed = (await user.applyObject(cm({ image: 'memcached:1.6', other: 'x' }), { fieldManager: 'test-user', force: true })).object
  t.not(changed.metadata.resourceVersion, first.metadata.resourceVersion, 'a real change is stored')
})

t.test('unchangedByApply compares the answer\'s resourceVersion and uid with the cached ones', async (t) => {
  const o = (rv: string | undefined, uid = 'u'): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's', uid, ...(rv === undefined ? {} : { resourceVersion: rv }) } })
  t.ok(unchangedByApply(o('5'), o('5')))
  t.notOk(unchangedByApply(o('5'), o('6')))
  t.notOk(unchangedByApply(o('5'), o('5', 'other')), 'a re-created object is a change')
  t.notOk(unchangedByApply(o(undefined), o(undefined)), 'without a resourceVersion nothing is known')
})
