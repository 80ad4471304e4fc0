/**
 * The workload kind: a StatefulSet or a Deployment runs the pods (test/fixtures/workload-chart,
 * `workload.kind`), status.serverList tells clients where the servers are, and switching a live CR
 * from one kind to the other never leaves the instance without a ready pod.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { isReady, observe } from './support/observe.ts'
import { eventually, operatorWrites, reconcileCount, reconciles, startBed, type Bed } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const chart = loadChart(join(import.meta.dirname, 'fixtures', 'workload-chart'))
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const sample = (name: string, kind: 'Deployment' | 'StatefulSet', size = 3) => ({ ...MC, metadata: { name, namespace: 'default' }, spec: { size, workload: { kind } } })
type Status = { nodes?: string[]; serverList?: string[]; servers?: number; readyReplicas?: number; replicas?: number; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] }
const statusOf = (o: KubeObject) => (o.status ?? {}) as Status
const condition = (o: KubeObject, type: string) => statusOf(o).conditions?.find((c) => c.type === type)
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const exists = async (c: KubeClient, kind: string, name: string) => {
  try {
    await c.get({ apiVersion: 'apps/v1', kind, namespace: 'default', name })
    return true
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return false
    throw err
  }
}

/** Waits until the CR is Ready for its current generation with `size` servers listed. */
async function converged(bed: Bed, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} Ready with ${size} servers`, async () => {
    const cr = await getMc(bed.client, name)
    const s = statusOf(cr)
    return s.observedGeneration === cr.metadata.generation && condition(cr, 'Ready')?.status === 'True' && s.servers === size && s.readyReplicas === size ? cr : undefined
  })
}

t.test('a StatefulSet CR converges with serverList of stable DNS names, and kubectl get mc shows how many', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('sts', 'StatefulSet'))
  const cr = await converged(bed, 'sts', 3)
  t.same(statusOf(cr).serverList, ['sts-0.sts.default.svc:11211', 'sts-1.sts.default.svc:11211', 'sts-2.sts.default.svc:11211'])
  t.same(statusOf(cr).nodes, ['sts-0', 'sts-1', 'sts-2'], 'nodes are the pod names')
  const pod = await bed.client.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'sts-1' })
  const spec = pod.spec as { hostname?: string; subdomain?: string }
  t.same([spec.hostname, spec.subdomain], ['sts-1', 'sts'], 'the pod has the DNS identity the name says (hostname.subdomain)')
  t.notOk(await exists(bed.client, 'Deployment', 'sts'), 'no Deployment')

  const kubectl = (...args: string[]) => promisify(execFile)(kubectlPath(), ['--kubeconfig', bed.sandbox.kubeconfigPath, ...args])
  const table = (await kubectl('get', 'mc', 'sts')).stdout
  t.match(table, /^NAME\s+SIZE\s+READY\s+SERVERS\s+STATUS\s+AGE\nsts\s+3\s+3\s+3\s+Reconciled\s/, 'the Servers column')
  t.equal((await kubectl('get', 'mc', 'sts', '-o', 'jsonpath={.status.serverList}')).stdout, JSON.stringify(statusOf(cr).serverList), 'what a client reads')

  // A pod that restarts (deleted, re-created by the StatefulSet controller) does not change the list.
  const before = (await getMc(bed.client, 'sts')).metadata.resourceVersion
  await bed.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'sts-1' })
  await eventually('sts-1 back and ready', async () => {
    const p = await bed.client.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'sts-1' })
    return p.metadata.uid !== pod.metadata.uid && isReady(p) ? true : undefined
  })
  const after = await converged(bed, 'sts', 3)
  t.same(statusOf(after).serverList, statusOf(cr).serverList, 'the same names')
  t.not(after.metadata.resourceVersion, before, 'while readiness was reported meanwhile')
})

t.test("a Deployment CR's serverList lists its ready pods' IPs, sorted", async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('dep', 'Deployment'))
  const cr = await converged(bed, 'dep', 3)
  const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=dep' })
  const ips = pods.items.map((p) => (p.status as { podIP: string }).podIP)
  t.equal(ips.length, 3)
  const numeric = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)
  t.same(statusOf(cr).serverList, [...ips].sort((a, b) => numeric(a) - numeric(b)).map((ip) => `${ip}:11211`))
  t.same(statusOf(cr).nodes, pods.items.map((p) => p.metadata.name).sort())

  await bed.client.patch({ ...MC, namespace: 'default', name: 'dep' }, { spec: { size: 1 } }, { type: 'merge' })
  const one = await converged(bed, 'dep', 1)
  const left = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=dep' })
  const alive = left.items.filter((p) => !p.metadata.deletionTimestamp)
  t.same(statusOf(one).serverList, alive.map((p) => `${(p.status as { podIP: string }).podIP}:11211`), 'scaled down: the pods that remain')
})

t.test('an idle resync of converged StatefulSet and Deployment CRs makes zero write requests', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create(sample('idle-sts', 'StatefulSet'))
  await bed.client.create(sample('idle-dep', 'Deployment'))
  await converged(bed, 'idle-sts', 3)
  await converged(bed, 'idle-dep', 3)
  await new Promise((r) => setTimeout(r, 300))
  bed.sandbox.requests.reset()
  const before = reconcileCount(bed.metrics)
  bed.controller.enqueueAll()
  await reconciles(bed.metrics, before, 2)
  bed.controller.enqueueAll()
  await reconciles(bed.metrics, before, 4)
  t.same(operatorWrites(bed.sandbox), [], 'no write')
})

for (const [from, to] of [['Deployment', 'StatefulSet'], ['StatefulSet', 'Deployment']] as const) {
  t.test(`switching a live CR from a ${from} to a ${to} brings the new one up before pruning the old one, with a ready pod at every moment`, async (t) => {
    // Pods take a while to become ready, so that the new workload is seen not ready for a while.
    // The bed resyncs every ten minutes: the prune that ends the switch is brought by the new
    // workload's status change alone.
    const bed = await startBed({ chart, sandbox: { podReadyDelayMs: 300 } })
    t.teardown(() => bed.stop())
    const name = `${from.toLowerCase()}-to-${to.toLowerCase()}`
    await bed.client.create(sample(name, from))
    await converged(bed, name, 3)
    const seen = await observe(bed, name)
    t.teardown(seen.stop)

    await bed.client.patch({ ...MC, namespace: 'default', name }, { spec: { workload: { kind: to } } }, { type: 'merge' })
    const oldPruned = await eventually(
      `the ${from} pruned`,
      async () => ((await exists(bed.client, from, name)) ? undefined : true),
      60_000,
    )
    t.ok(oldPruned)
    const cr = await converged(bed, name, 3)
    await eventually('the old pods gone', async () => {
      const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })
      return pods.items.length === 3 && pods.items.every((p) => p.metadata.ownerReferences?.[0]?.kind === (to === 'StatefulSet' ? 'StatefulSet' : 'ReplicaSet')) ? true : undefined
    })
    seen.stop()

    t.ok(await exists(bed.client, to, name), `the ${to} runs`)
    t.ok(seen.readyPods.length > 3, `pod events observed (${seen.readyPods.length})`)
    t.notOk(seen.readyPods.includes(0), `at least one ready pod after every pod event (fewest: ${Math.min(...seen.readyPods)})`)
    t.ok(seen.readyEndpoints.length > 1, `EndpointSlice events observed (${seen.readyEndpoints.length})`)
    t.notOk(seen.readyEndpoints.includes(0), `the Service had a ready endpoint after every EndpointSlice event (fewest: ${Math.min(...seen.readyEndpoints)})`)
    t.same(seen.stolen, [], "no workload took the other's pods")
    const waiting = [...seen.progressing].filter((p) => p.startsWith('SwitchingWorkload: '))
    t.ok(waiting.length > 0, 'Progressing said what the prune waited for')
    t.match(waiting.join('\n'), new RegExp(`${to} default/${name}.*; ${from} default/${name} keeps serving until then and is pruned after`))
    t.equal(condition(cr, 'Progressing')?.reason, 'RolloutComplete')
    if (to === 'StatefulSet') t.same(statusOf(cr).serverList, [0, 1, 2].map((i) => `${name}-${i}.${name}.default.svc:11211`))
    else t.match(statusOf(cr).serverList, [/^10\.\d+\.\d+\.\d+:11211$/, /^10\./, /^10\./])
    const events = await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
    const pruned = events.items.map((e) => e as unknown as { reason?: string; message?: string }).filter((e) => e.reason === 'Pruned')
    t.ok(pruned.some((e) => e.message?.includes(`${from} default/${name}`)), 'a Pruned event for the old workload')
  })
}
