/**
 * A larger memoryMB without a restart, end to end: the operator against the sandbox (which serves
 * pods/resize as kube-apiserver 1.33+ does), and behind each sandbox pod a real memcached started
 * with the rendered args. Growing keeps every pod (uid, restart count), the StatefulSet's revision
 * and the items, with the new limit in effect (pods/resize, then cache_memlimit); shrinking, and a
 * cluster without pods/resize, restart the pods with the reason in an event.
 */
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { plain, setGet, stats } from './support/memcached-client.ts'
import { running, startPod, type Memcached } from './support/memcached.ts'
import { eventually, startBed, type Bed } from './support/operator.ts'

const chart = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Condition = { type: string; status: string; reason: string; message: string }

const processes = new Map<string, Memcached>()
/** Dials by pod name: each a try of the operator's to reach that pod's memcached. */
const dials = new Map<string, number>()
const dial = (pod: KubeObject) => {
  dials.set(pod.metadata.name ?? '', (dials.get(pod.metadata.name ?? '') ?? 0) + 1)
  return { host: '127.0.0.1', port: processes.get(pod.metadata.name ?? '')?.port ?? 1 }
}
const bed = await startBed({ chart, reloadRetryMs: 100, reloadSettleMs: 0, podDialer: dial })
t.teardown(async () => {
  for (const p of processes.values()) await p.stop()
  await bed.stop()
})

const spec = (memoryMB: number) => ({ size: 2, workload: { kind: 'StatefulSet' }, memoryMB })
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const events = async (b: Bed, name: string) =>
  (await b.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name},involvedObject.kind=Memcached` })).items as (KubeObject & { reason: string; type: string; message: string })[]
const podsOf = async (b: Bed, name: string) => (await b.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })).items
type Res = { requests?: Record<string, string>; limits?: Record<string, string> }
const memcachedOf = (p: KubeObject) => (p.spec as { containers: { name: string; args: string[]; resources: Res }[] }).containers.find((c) => c.name === 'memcached')!
const statusResources = (p: KubeObject) => (p.status as { containerStatuses: { name: string; resources?: Res; restartCount: number }[] }).containerStatuses.find((c) => c.name === 'memcached')

async function ready(b: Bed, name: string): Promise<void> {
  await eventually(`${name} Ready with 2 pods`, async () => {
    const o = await getMc(b.client, name)
    const s = (o.status ?? {}) as { observedGeneration?: number; readyReplicas?: number }
    return s.observedGeneration === o.metadata.generation && condition(o, 'Ready')?.status === 'True' && s.readyReplicas === 2 ? true : undefined
  })
}

t.test('memoryMB 64 → 128: every pod is resized in place, memcached\'s limit follows, the pods, the revision and the items stay', async (t) => {
  const objects = renderInstance(chart, { name: 'grow', namespace: 'default', spec: spec(64) }).objects
  for (const pod of ['grow-0', 'grow-1']) processes.set(pod, running(await startPod(objects, { podName: pod })))
  await bed.client.create({ ...MC, metadata: { name: 'grow', namespace: 'default' }, spec: spec(64) })
  await ready(bed, 'grow')
  for (const pod of ['grow-0', 'grow-1']) {
    const c = await plain(processes.get(pod)!.port)
    t.equal(await setGet(c, 'warm', pod), pod)
    c.close()
  }
  const before = await podsOf(bed, 'grow')
  const sts = () => bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'grow' })
  const revision = ((await sts()).status as { updateRevision: string }).updateRevision
  const rendered = renderInstance(chart, { name: 'grow', namespace: 'default', spec: spec(128) }).objects.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { template: KubeObject } }
  const want = memcachedOf(rendered.spec.template)

  await bed.client.patch({ ...MC, namespace: 'default', name: 'grow' }, { spec: { memoryMB: 128 } }, { type: 'merge' })
  const resized = await eventually('MemoryResized True', async () => {
    const c = condition(await getMc(bed.client, 'grow'), 'MemoryResized')
    return c?.status === 'True' ? c : undefined
  })
  t.equal(resized.message, 'every ready pod (2) runs with memoryMB 128, resized in place')
  const after = await podsOf(bed, 'grow')
  t.same(after.map((p) => [p.metadata.name, p.metadata.uid]).sort(), before.map((p) => [p.metadata.name, p.metadata.uid]).sort(), 'the same pods')
  for (const p of after) {
    t.same(memcachedOf(p).resources, want.resources, `${p.metadata.name}: its memory request and limit raised in place`)
    t.same(statusResources(p)?.resources, want.resources, `${p.metadata.name}: the kubelet runs it with them`)
    t.equal(statusResources(p)?.restartCount, 0)
  }
  const now = await sts()
  t.equal((now.status as { updateRevision: string }).updateRevision, revision, 'the StatefulSet\'s template kept: no rollout')
  t.match(now.metadata.annotations?.['memcached.cache.example.com/reload'], /"memoryMB":128/, 'the new size on the workload')
  for (const pod of ['grow-0', 'grow-1']) {
    const c = await plain(processes.get(pod)!.port)
    t.equal((await stats(c)).limit_maxbytes, String(128 * 1024 * 1024), `${pod}: memcached's limit`)
    t.equal(await c.command('get warm\r\n', 'END\r\n'), `VALUE warm 0 6\r\n${pod}\r\nEND\r\n`, `${pod}: the items kept`)
    c.close()
  }
  const event = (await events(bed, 'grow')).find((e) => e.reason === 'MemoryResized')
  t.equal(event?.message, 'memoryMB 128 in place on grow-0, grow-1 (pods/resize, then memcached\'s cache_memlimit); no pod restarted')
})

t.test('memoryMB 128 → 64, the size the template still has: nothing restarts the pods, an event says how to apply it', async (t) => {
  const before = (await podsOf(bed, 'grow')).map((p) => p.metadata.uid).sort()
  await bed.client.patch({ ...MC, namespace: 'default', name: 'grow' }, { spec: { memoryMB: 64 } }, { type: 'merge' })
  const event = await eventually('the MemoryNotShrunk event', async () => (await events(bed, 'grow')).find((e) => e.reason === 'MemoryNotShrunk'))
  t.equal(event.message, 'memoryMB 64 is what the pod template already gives, so nothing restarts the pods: they keep memoryMB 128 (grown in place) until they restart (kubectl rollout restart applies it)')
  t.same((await podsOf(bed, 'grow')).map((p) => p.metadata.uid).sort(), before, 'the same pods')
  const sts = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'grow' })
  t.match(sts.metadata.annotations?.['memcached.cache.example.com/reload'], /"memoryMB":128/, 'the workload still says what the pods run with')
})

t.test('memoryMB → 96, below what the pods run with: the API server refuses to lower a memory limit in place, so the pods restart, and an event says why', async (t) => {
  const before = new Set((await podsOf(bed, 'grow')).map((p) => p.metadata.uid))
  await bed.client.patch({ ...MC, namespace: 'default', name: 'grow' }, { spec: { memoryMB: 96 } }, { type: 'merge' })
  const event = await eventually('the MemoryResizeRestart event', async () => (await events(bed, 'grow')).find((e) => e.reason === 'MemoryResizeRestart'))
  t.equal(event.message, 'kube-apiserver refuses to lower a running container\'s memory limit (pods/resize), so the pods restart with memoryMB 96 (was 128)')
  await eventually('every pod replaced', async () => {
    const pods = await podsOf(bed, 'grow')
    return pods.length === 2 && pods.every((p) => !before.has(p.metadata.uid) && memcachedOf(p).args.join(' ').includes('-m 96')) ? true : undefined
  })
})

t.test('a larger memoryMB with another change of the pod template: the pods restart with both, and an event says why', async (t) => {
  const before = new Set((await podsOf(bed, 'grow')).map((p) => p.metadata.uid))
  await bed.client.patch({ ...MC, namespace: 'default', name: 'grow' }, { spec: { memoryMB: 112, podLabels: { team: 'cache' } } }, { type: 'merge' })
  const event = await eventually('the MemoryResizeRestart event', async () => (await events(bed, 'grow')).find((e) => e.reason === 'MemoryResizeRestart' && e.message.includes('112')))
  t.match(event.message, /^the pod template changes beyond memcached's memory \(\.spec\.template\.metadata\.labels\.team\), so the pods restart with memoryMB 112 as well$/)
  await eventually('every pod replaced at -m 112', async () => {
    const pods = await podsOf(bed, 'grow')
    return pods.length === 2 && pods.every((p) => !before.has(p.metadata.uid) && memcachedOf(p).args.join(' ').includes('-m 112')) ? true : undefined
  })
})

t.test('pods resized whose memcached the operator cannot reach: MemoryResized False ResizeFailed, naming each pod, and a Warning event', async (t) => {
  // No process behind these pods: the dialer gives a port nothing listens on.
  await bed.client.create({ ...MC, metadata: { name: 'far', namespace: 'default' }, spec: spec(64) })
  await ready(bed, 'far')
  await bed.client.patch({ ...MC, namespace: 'default', name: 'far' }, { spec: { memoryMB: 80 } }, { type: 'merge' })
  const failed = await eventually('MemoryResized ResizeFailed', async () => {
    const c = condition(await getMc(bed.client, 'far'), 'MemoryResized')
    return c?.reason === 'ResizeFailed' && c.message.includes('far-0') && c.message.includes('far-1') ? c : undefined
  })
  t.equal(failed.status, 'False')
  t.match(failed.message, /^pod far-\d: 127\.0\.0\.1:1: .*ECONNREFUSED/)
  for (const p of await podsOf(bed, 'far')) t.equal(statusResources(p)?.resources?.limits?.memory, memcachedOf(p).resources.limits?.memory, `${p.metadata.name}: resized by the kubelet all the same`)
  t.ok((await events(bed, 'far')).some((e) => e.type === 'Warning' && e.reason === 'ResizeFailed'))
  t.ok((bed.metrics.counts['failed:ResizeFailed'] ?? 0) >= 1, 'the reconcile failures metric, by reason')
  // The tries back off, doubling from the 100 ms retry period up to RESIZE_MAX_RETRY_MS: over 3 s
  // at most five more, where a fixed period makes some thirty (each a read of every pod and an event).
  const from = dials.get('far-0') ?? 0
  await new Promise((r) => setTimeout(r, 3000))
  const tries = (dials.get('far-0') ?? 0) - from
  t.ok(tries >= 1 && tries <= 6, `the operator tried far-0 again ${tries} times in 3 s`)
})

t.test('a cluster without pods/resize (before 1.33): a larger memoryMB restarts the pods, and an event says why', async (t) => {
  const older = await startBed({ chart, sandbox: { podResize: false }, podDialer: dial })
  t.teardown(() => older.stop())
  await older.client.create({ ...MC, metadata: { name: 'old', namespace: 'default' }, spec: spec(64) })
  await ready(older, 'old')
  const before = new Set((await podsOf(older, 'old')).map((p) => p.metadata.uid))
  await older.client.patch({ ...MC, namespace: 'default', name: 'old' }, { spec: { memoryMB: 128 } }, { type: 'merge' })
  const event = await eventually('the MemoryResizeRestart event', async () => (await events(older, 'old')).find((e) => e.reason === 'MemoryResizeRestart'))
  t.equal(event.message, 'the cluster does not serve pods/resize (in-place pod resize, Kubernetes 1.33 and later), so the pods restart with memoryMB 128 (was 64)')
  await eventually('every pod replaced at -m 128', async () => {
    const pods = await podsOf(older, 'old')
    return pods.length === 2 && pods.every((p) => !before.has(p.metadata.uid) && memcachedOf(p).args.join(' ').includes('-m 128')) ? true : undefined
  })
})
