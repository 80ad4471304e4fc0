/**
 * pods/resize, as kube-apiserver 1.33+ serves it: kubernetes pkg/registry/core/pod/strategy.go
 * (podResizeStrategy, dropNonResizeUpdates) and pkg/apis/core/validation/validation.go
 * (ValidatePodResize, validateContainerResize; the cases of its TestValidatePodResize), through
 * the client and through real kubectl (`kubectl patch --subresource resize`); the simulated
 * kubelet carries a resize out and reports it in containerStatuses[].resources.
 */
import t from 'tap'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually } from './support/operator.ts'

const sandbox: Sandbox = await startSandbox({ podReadyDelayMs: 5 })
const client: KubeClient = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(async () => {
  client.close()
  await sandbox.close()
})

type Res = { requests?: Record<string, string>; limits?: Record<string, string> }
const pod = (name: string, resources: Res, extra: Record<string, unknown> = {}) =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'memcached:1.6.38', resources, ...extra }] } }) as KubeObject
const ref = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name })
const containerOf = (p: KubeObject) => (p.spec as { containers: { image: string; resources: Res }[] }).containers[0]!
const statusOf = (p: KubeObject) => (p.status as { qosClass: string; containerStatuses?: { resources?: Res; allocatedResources?: Record<string, string> }[] })

async function running(name: string, resources: Res, extra: Record<string, unknown> = {}): Promise<KubeObject> {
  await client.create(pod(name, resources, extra))
  return eventually(`${name} running`, async () => {
    const p = await client.get(ref(name))
    return statusOf(p).containerStatuses?.[0]?.resources ? p : undefined
  })
}
const resize = (name: string, resources: Res, extra: Record<string, unknown> = {}) =>
  client.patch(ref(name), { spec: { containers: [{ name: 'c', resources, ...extra }] } }, { type: 'strategic', subresource: 'resize' })
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'accepted'
  } catch (err) {
    return err instanceof ApiError ? `${err.status} ${err.message}` : String(err)
  }
}

/** GET of a path, as JSON. */
async function getJson(c: KubeClient, path: string): Promise<unknown> {
  const res = await c.request({ method: 'GET', path })
  return JSON.parse(res.body.toString())
}

const guaranteed = { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '100m', memory: '128Mi' } }

t.test('discovery lists pods/resize (get, patch, update), and the kubelet reports each container\'s resources', async (t) => {
  const list = (await getJson(client, '/api/v1')) as { resources: { name: string; verbs: string[] }[] }
  t.same(list.resources.find((r) => r.name === 'pods/resize')?.verbs, ['get', 'patch', 'update'])
  const p = await running('reported', guaranteed)
  t.same(statusOf(p).containerStatuses?.[0]?.resources, guaranteed, 'containerStatuses[].resources: what the container runs with')
  t.same(statusOf(p).containerStatuses?.[0]?.allocatedResources, guaranteed.requests)
  t.equal(statusOf(p).qosClass, 'Guaranteed')
})

t.test('a memory growth is accepted and carried out in place: the same pod, the new resources in its status; other changes in the request are dropped', async (t) => {
  const before = await running('grow', guaranteed)
  const grown = { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '100m', memory: '256Mi' } }
  const after = await client.patch(ref('grow'), { metadata: { labels: { app: 'changed' } }, spec: { containers: [{ name: 'c', image: 'memcached:other', resources: grown }] } }, { type: 'strategic', subresource: 'resize' })
  t.same(containerOf(after).resources, grown)
  t.equal(containerOf(after).image, 'memcached:1.6.38', 'dropNonResizeUpdates: the image is not the resize\'s to change')
  t.same(after.metadata.labels, { app: 'grow' }, 'nor the labels')
  t.equal(after.metadata.uid, before.metadata.uid)
  const actuated = await eventually('the kubelet carried it out', async () => {
    const p = await client.get(ref('grow'))
    return statusOf(p).containerStatuses?.[0]?.resources?.limits?.memory === '256Mi' ? p : undefined
  })
  t.same(statusOf(actuated).containerStatuses?.[0]?.resources, grown)
  t.equal(statusOf(actuated).qosClass, 'Guaranteed')
})

t.test('validateContainerResize: a memory limit is not lowered in place unless the container\'s memory resizePolicy is RestartContainer', async (t) => {
  await running('shrink', guaranteed)
  const smaller = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }
  t.equal(await refusal(resize('shrink', smaller)), '422 Pod "shrink" is invalid: spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer')
  await running('shrink-restart', guaranteed, { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] })
  t.equal(await refusal(resize('shrink-restart', smaller, { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] })), 'accepted')
})

t.test('ValidatePodResize: the QoS class may not change, requests may not be removed, only cpu and memory may change', async (t) => {
  await running('qos', guaranteed)
  t.match(await refusal(resize('qos', { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '100m', memory: '256Mi' } })), /^422 .*spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing$/)
  await running('burst', { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } })
  // A strategic merge keeps the requests not named; null removes them.
  t.match(await refusal(resize('burst', { requests: null, limits: { memory: '256Mi' } } as unknown as Res)), /spec.containers\[0\].resources.requests: Forbidden: resource requests cannot be removed/)
  t.match(await refusal(resize('burst', { requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '1Gi' }, limits: { memory: '128Mi' } })), /spec: Forbidden: only cpu and memory resources are mutable/)
  t.equal(await refusal(resize('burst', { requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '256Mi' } })), 'accepted', 'Burstable stays Burstable')
})

t.test('ValidatePodResize: a pod on a node that does not report its containers\' resources (no resize support) is refused', async (t) => {
  const p = await running('old-node', guaranteed)
  const statuses = statusOf(p).containerStatuses!.map(({ resources: _r, allocatedResources: _a, ...s }) => s)
  await client.replaceStatus({ ...p, status: { ...(p.status as object), containerStatuses: statuses } })
  t.match(await refusal(resize('old-node', { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '100m', memory: '256Mi' } })), /spec: Forbidden: Pod running on node without support for resize/)
})

t.test('real kubectl resizes a pod through the subresource', async (t) => {
  await running('kubectl-resize', guaranteed)
  const kubectl = kubectlFor(sandbox.kubeconfigPath)
  const out = await kubectl(['patch', 'pod', 'kubectl-resize', '-n', 'default', '--subresource', 'resize', '-p', JSON.stringify({ spec: { containers: [{ name: 'c', resources: { requests: { memory: '192Mi' }, limits: { memory: '192Mi' } } }] } })])
  t.match(out, /pod\/kubectl-resize patched/)
  t.equal(containerOf(await client.get(ref('kubectl-resize'))).resources.limits?.memory, '192Mi')
})

t.test('a cluster without pods/resize (before 1.33): not in discovery, a resize is 404', async (t) => {
  const older = await startSandbox({ podResize: false, controllers: false })
  const c = clientFor(older, 'test-user/1', 'test-user')
  t.teardown(async () => {
    c.close()
    await older.close()
  })
  const list = (await getJson(c, '/api/v1')) as { resources: { name: string }[] }
  t.notOk(list.resources.some((r) => r.name === 'pods/resize'))
  await c.create(pod('p', guaranteed))
  t.match(await refusal(c.patch(ref('p'), { spec: { containers: [{ name: 'c', resources: guaranteed }] } }, { type: 'strategic', subresource: 'resize' })), /^404 /)
})

t.test('ValidatePodResize refuses pod-level resources, static and Windows pods, resized non-sidecar init containers and renamed containers; a sidecar resizes as a container', async (t) => {
  const { resizedPod, validateResize, podQos } = await import('../operator/sandbox/pod-resize.ts')
  const base = (extra: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) =>
    ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', ...meta }, spec: { containers: [{ name: 'c', image: 'i', resources: guaranteed }], ...extra }, status: { qosClass: 'Guaranteed' } }) as unknown as KubeObject
  const bigger = { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '100m', memory: '256Mi' } }
  const asked = (old: KubeObject, spec: Record<string, unknown>) => resizedPod({ ...old, spec: { ...(old.spec as object), ...spec } } as KubeObject, old)
  const messages = (old: KubeObject, spec: Record<string, unknown>) => validateResize(asked(old, spec), old).map((c) => `${c.field}: ${c.message}`)
  t.same(messages(base({ resources: { limits: { memory: '1Gi' } } }), { containers: [{ name: 'c', image: 'i', resources: bigger }] }), [': Forbidden: pods with pod-level resources cannot be resized'])
  t.same(messages(base({}, { annotations: { 'kubernetes.io/config.mirror': 'x' } }), { containers: [{ name: 'c', image: 'i', resources: bigger }] }), [': Forbidden: static pods cannot be resized'])
  t.same(messages(base({ os: { name: 'windows' } }), { containers: [{ name: 'c', image: 'i', resources: bigger }] }), [': Forbidden: windows pods cannot be resized'])
  t.same(messages(base(), { containers: [{ name: 'd', image: 'i', resources: bigger }] }), ['spec: Forbidden: only cpu and memory resources are mutable'], 'a renamed container')
  const init = (restartPolicy?: string) => base({ initContainers: [{ name: 'init', image: 'i', resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '10m', memory: '16Mi' } }, ...(restartPolicy ? { restartPolicy } : {}) }] })
  const initBigger = (restartPolicy?: string) => ({ containers: [{ name: 'c', image: 'i', resources: guaranteed }], initContainers: [{ name: 'init', image: 'i', resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '10m', memory: '32Mi' } }, ...(restartPolicy ? { restartPolicy } : {}) }] })
  t.same(messages(init(), initBigger()), ['spec: Forbidden: resources for non-sidecar init containers are immutable'])
  t.same(messages(init('Always'), initBigger('Always')), [], 'a sidecar (restartPolicy Always) resizes as a container')
  t.equal(podQos(base()), 'Guaranteed')
  t.equal(podQos({ ...base(), spec: { containers: [{ name: 'c', image: 'i' }] } } as unknown as KubeObject), 'BestEffort')
  t.equal(podQos({ ...base(), spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' } } }] } } as unknown as KubeObject), 'Guaranteed', 'limits alone: requests default to them')
})
