/**
 * A fleet split into shards by label (`run --selector`), each shard with its own Lease: every
 * Memcached is reconciled by the shard its labels select and by no other, a Memcached relabelled
 * into another shard moves with its labels, and one no shard selects is left alone. Each shard
 * talks to the sandbox through its own tagging proxy, so the sandbox's request log says who wrote.
 */
import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { startOperator, type Operator, type RunOptions } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, runOptions } from './support/operator.ts'
import { stallingProxy } from './support/stalling-proxy.ts'
import { kubeconfigFor } from './fixtures/reliability/support.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default' } as const
const mc = (name: string, shard?: string): KubeObject => ({ apiVersion: MC.apiVersion, kind: MC.kind, metadata: { name, namespace: 'default', ...(shard ? { labels: { shard } } : {}) }, spec: { size: 1 } })

/** The CR names each tagged process wrote the status of, and the Memcacheds' own writes. */
function statusWriters(sb: Sandbox): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  for (const r of sb.requests.log()) {
    if (r.resource !== 'memcacheds' || r.subresource !== 'status' || r.code >= 400 || !r.name) continue
    const tag = /\((\w+)\)$/.exec(r.userAgent ?? '')?.[1]
    if (!tag) continue
    if (!out.has(r.name)) out.set(r.name, new Set())
    out.get(r.name)!.add(tag)
  }
  return out
}

t.test('two shards by label, each with its own Lease: a Memcached is reconciled by its shard only, and moves with its label', async (t) => {
  const sb = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 100_000, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const user = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const shards: Operator[] = []
  for (const shard of ['a', 'b']) {
    const proxy = await stallingProxy(sb.url, shard)
    t.teardown(() => proxy.close())
    const opts: RunOptions = { ...runOptions(kubeconfigFor(sb.kubeconfigPath, proxy.url)), selector: `shard=${shard}`, leaderElect: true, leaderElectionNamespace: 'default', leaderElectionId: `memcached-operator-shard-${shard}` }
    const op = await startOperator(opts, captureIO(), pino({ level: 'silent' }))
    t.teardown(() => op.stop())
    shards.push(op)
  }
  await eventually('both shards to lead their own Lease', async () => shards.every((s) => s.elector?.isLeader()) || undefined)
  for (const [name, shard] of [['a-1', 'a'], ['a-2', 'a'], ['b-1', 'b'], ['none', undefined]] as const) await user.create(mc(name, shard))
  const ready = (name: string) => eventually(`${name} ready`, async () => ((await user.get({ ...MC, name })).status as { readyReplicas?: number } | undefined)?.readyReplicas === 1 || undefined)
  for (const name of ['a-1', 'a-2', 'b-1']) await ready(name)

  const writers = statusWriters(sb)
  t.same([...(writers.get('a-1') ?? [])], ['a'])
  t.same([...(writers.get('a-2') ?? [])], ['a'])
  t.same([...(writers.get('b-1') ?? [])], ['b'])
  t.notOk(writers.has('none'), 'a Memcached no shard selects is left alone')
  t.same((await user.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.map((d) => d.metadata.name).sort(), ['a-1', 'a-2', 'b-1'])
  // Each shard's caches hold its own Memcacheds' objects and pods only: they carry their CR's shard label.
  const instanceOf = (entry: string) => /^\w+ default\/(a-1|a-2|b-1|none)/.exec(entry)?.[1]
  for (const [i, own] of [[0, ['a-1', 'a-2']], [1, ['b-1']]] as const) {
    const cached = shards[i]!.controller.cachedObjects()
    t.ok(cached.some((e) => e.startsWith('Deployment ')) && cached.some((e) => e.startsWith('Pod ')), `shard ${'ab'[i]} caches its children and pods`)
    t.same([...new Set(cached.map(instanceOf))].sort(), own, `shard ${'ab'[i]} caches only its own`)
  }
  const leases = (await user.list({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, { namespace: 'default' })).items.map((l) => l.metadata.name).sort()
  t.same(leases, ['memcached-operator-shard-a', 'memcached-operator-shard-b'])

  // Relabelled into shard b: b takes it over, a writes to it no more.
  await user.patch({ ...MC, name: 'a-2' }, { metadata: { labels: { shard: 'b' } } }, { type: 'merge' })
  sb.requests.reset()
  await user.patch({ ...MC, name: 'a-2' }, { spec: { size: 2 } }, { type: 'merge' })
  await eventually('a-2 scaled by shard b', async () => ((await user.get({ ...MC, name: 'a-2' })).status as { readyReplicas?: number } | undefined)?.readyReplicas === 2 || undefined)
  t.same([...(statusWriters(sb).get('a-2') ?? [])], ['b'], 'only shard b wrote a-2 after the move')
  const deploymentWriters = new Set(sb.requests.log().filter((r) => r.resource === 'deployments' && r.name === 'a-2' && r.verb === 'patch').map((r) => /\((\w+)\)$/.exec(r.userAgent ?? '')?.[1]))
  t.same([...deploymentWriters], ['b'])
  await eventually('a-2 in shard b\'s caches, gone from a\'s', async () => (shards[1]!.controller.cachedObjects().some((e) => e.startsWith('Deployment default/a-2')) && !shards[0]!.controller.cachedObjects().some((e) => e.includes('default/a-2')) ? true : undefined))
  t.pass('its objects moved from shard a\'s caches to shard b\'s')
})

t.test('a shard selector on a label the operator sets on every object is refused before anything starts', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  await t.rejects(startOperator({ ...runOptions(sb.kubeconfigPath), selector: 'app.kubernetes.io/instance in (a,b)' }, captureIO(), pino({ level: 'silent' })), { name: 'UsageError', message: /^--selector: label selector "app\.kubernetes\.io\/instance in \(a,b\)": app\.kubernetes\.io\/instance is set by the operator on every object/ })
})

t.test('a selector the API server refuses stops run with its message before anything starts', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  await t.rejects(startOperator({ ...runOptions(sb.kubeconfigPath), selector: 'shard in (a' }, captureIO(), pino({ level: 'silent' })), { name: 'UsageError', message: /^--selector "shard in \(a": unable to parse requirement/ })
})

t.test('the selector\'s check is one request, however many Memcacheds it selects (a consistent list with a limit is paginated)', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const user = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  for (const name of ['s-1', 's-2', 's-3']) await user.create(mc(name, 'a'))
  sb.requests.reset()
  const op = await startOperator({ ...runOptions(sb.kubeconfigPath), selector: 'shard=a' }, captureIO(), pino({ level: 'silent' }))
  t.teardown(() => op.stop())
  const lists = sb.requests.log().filter((r) => r.verb === 'list' && r.resource === 'memcacheds' && r.userAgent?.startsWith('memcached-operator/'))
  t.equal(lists.length, 1, 'one page of one item, its continue not followed')
})
