/**
 * The sandbox's controllers stand for kube-controller-manager, the scheduler and the kubelet,
 * which send protobuf: their bodies are decoded into the kinds' Go types and cannot hold a field a
 * type lacks nor a quantity that does not parse, so the server does not walk them for either
 * (types.ts `typed`). This holds them to it: through a Deployment's and a StatefulSet's lives
 * (creation, pods scheduled, started and ready, endpoints, a disruption budget, a scale, a rollout,
 * a deletion), no version of any built-in object the server stored has a field upstream's schema
 * of its kind lacks, nor a quantity apimachinery's parser refuses.
 */
import t from 'tap'
import { tableOf } from '../operator/sandbox/registry.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'

const labels = (app: string) => ({ app })
const podTemplate = (app: string, image: string) => ({ metadata: { labels: labels(app) }, spec: { containers: [{ name: 'memcached', image, ports: [{ name: 'memcache', containerPort: 11211 }], resources: { requests: { cpu: '50m', memory: '64Mi' } } }] } })

t.test('no version of an object the controllers wrote has a field its kind lacks or a quantity that does not parse', async (t) => {
  const { sb, call, get } = await controllersBed(t, { podReadyDelayMs: 20, resyncMs: 200 })
  const start = sb.cluster.store.resourceVersion
  const ok = async (r: Parameters<typeof call>[0]) => {
    const res = await call(r)
    if (res.status >= 300) throw new Error(`${r.verb} ${r.resource}: ${res.status} ${JSON.stringify(res.body)}`)
  }
  await ok({ verb: 'create', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 2, selector: { matchLabels: labels('web') }, template: podTemplate('web', 'memcached:1.6.38') } } })
  await ok({ verb: 'create', resource: 'services', namespace: 'default', body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: labels('web'), ports: [{ port: 11211, targetPort: 'memcache' }] } } })
  await ok({ verb: 'create', group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', namespace: 'default', body: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: 'default' }, spec: { minAvailable: 1, selector: { matchLabels: labels('web') } } } })
  await ok({ verb: 'create', resource: 'services', namespace: 'default', body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'db', namespace: 'default' }, spec: { clusterIP: 'None', selector: labels('db'), ports: [{ port: 11211 }] } } })
  await ok({ verb: 'create', group: 'apps', version: 'v1', resource: 'statefulsets', namespace: 'default', body: { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'default' }, spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: labels('db') }, template: podTemplate('db', 'memcached:1.6.38') } } })
  const ready = (resource: string, name: string, n: number) => until(`${resource}/${name} ready`, async () => ((await get(resource, name, 'apps')) as Obj | undefined)?.status?.readyReplicas === n)
  await ready('deployments', 'web', 2)
  await ready('statefulsets', 'db', 2)
  await ok({ verb: 'patch', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 3 } } })
  await ready('deployments', 'web', 3)
  await ok({ verb: 'patch', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { template: podTemplate('web', 'memcached:1.6.39') } } })
  await until('rollout done', async () => {
    const d = (await get('deployments', 'web', 'apps')) as Obj | undefined
    return d?.status?.updatedReplicas === 3 && d.status.replicas === 3 && d.status.readyReplicas === 3
  })
  await ok({ verb: 'delete', group: 'apps', version: 'v1', resource: 'statefulsets', namespace: 'default', name: 'db' })
  await until("the StatefulSet's pods gone", async () => ((await call({ verb: 'list', resource: 'pods', namespace: 'default', query: new URLSearchParams({ labelSelector: 'app=db' }) })).body as { items: Obj[] }).items.length === 0)

  const checked = new Map<string, number>()
  const unknown: string[] = []
  const undecodable: string[] = []
  for (const type of sb.cluster.registry.all().filter((ty) => !ty.custom && ty.undeclared)) {
    for (const e of sb.cluster.store.since(tableOf(type), start) ?? []) {
      const o = e.current.obj as KubeObject
      checked.set(type.kind, (checked.get(type.kind) ?? 0) + 1)
      for (const path of type.undeclared!(structuredClone(o))) unknown.push(`${type.kind} ${o.metadata.name} (resourceVersion ${o.metadata.resourceVersion}): ${path}`)
      const bad = type.decodeError?.(structuredClone(o))
      if (bad !== undefined) undecodable.push(`${type.kind} ${o.metadata.name} (resourceVersion ${o.metadata.resourceVersion}): ${bad}`)
    }
  }
  t.same(unknown, [], 'no unknown field in any version')
  t.same(undecodable, [], 'every version decodes into its Go type (types, quantities)')
  for (const kind of ['Pod', 'ReplicaSet', 'Deployment', 'StatefulSet', 'ControllerRevision', 'Endpoints', 'EndpointSlice', 'PodDisruptionBudget', 'Event']) t.ok((checked.get(kind) ?? 0) > 0, `${kind}: ${checked.get(kind) ?? 0} versions checked`)
})
