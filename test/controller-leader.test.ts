/**
 * Leader election between candidates against the sandbox. Timers are real, but "now" is a manual
 * clock, so "after the lease duration" is a step the test takes, never a race against wall time.
 */
import t, { type Test } from 'tap'
import { KubeConfig } from '@kubernetes/client-node'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { KubeClient } from '../operator/controller/client.ts'
import { LeaderElector, microTime, defaultIdentity, type Lease, type LeaderElectorOptions } from '../operator/controller/leader.ts'
import { realClock, type Clock } from '../operator/controller/clock.ts'

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'op-leader' }

/** Real timers, manual time. */
function manualNow(): Clock & { advance(ms: number): void } {
  let now = Date.UTC(2026, 10, 21)
  return { now: () => now, setTimeout: realClock.setTimeout, clearTimeout: realClock.clearTimeout, advance: (ms) => (now += ms) }
}

async function setup(t: Test): Promise<{ sb: Sandbox; kc: KubeConfig; clock: ReturnType<typeof manualNow>; client: KubeClient }> {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kc = new KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const client = new KubeClient(kc, { userAgent: 'leader-test/observer' })
  t.teardown(() => client.close())
  return { sb, kc, clock: manualNow(), client }
}

interface Candidate {
  elector: LeaderElector
  events: string[]
  /** Requests this candidate sent so far. */
  requests(): number
}

function candidate(t: Test, env: { sb: Sandbox; kc: KubeConfig; clock: Clock }, id: string, opts: Partial<LeaderElectorOptions> = {}): Candidate {
  const ua = `leader-test/${id}`
  const client = new KubeClient(env.kc, { userAgent: ua })
  const events: string[] = []
  const elector = new LeaderElector({
    client,
    namespace: 'default',
    name: 'op-leader',
    identity: id,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 10,
    clock: env.clock,
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => events.push('stopped'),
    onNewLeader: (who) => events.push(`leader ${who}`),
    ...opts,
  })
  t.teardown(async () => {
    await elector.stop()
    client.close()
  })
  return { elector, events, requests: () => env.sb.requests.counts().byUserAgent[ua] ?? 0 }
}

async function eventually(t: Test, what: string, pred: () => boolean): Promise<void> {
  const until = Date.now() + 15_000
  while (!pred()) {
    if (Date.now() > until) {
      t.fail(`timed out waiting for: ${what}`)
      return
    }
    await new Promise((r) => setTimeout(r, 5))
  }
}

t.test('helpers and option checks', async (t) => {
  t.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), '2026-01-02T03:04:05.678000Z')
  t.match(defaultIdentity(), /^.+_[0-9a-f-]{36}$/)
  const { kc } = await setup(t)
  const client = new KubeClient(kc, { userAgent: 'x' })
  t.throws(() => new LeaderElector({ client, namespace: 'd', name: 'l', leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }), /renewDeadline/)
  t.throws(() => new LeaderElector({ client, namespace: 'd', name: 'l', renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), /retryPeriod/)
  const e = new LeaderElector({ client, namespace: 'd', name: 'l' })
  t.match(e.identity, /_/)
  t.equal(await e.release(), false, 'releasing without leading does nothing')
  client.close()
})

t.test('of two candidates exactly one leads, and keeps renewing', async (t) => {
  const env = await setup(t)
  const a = candidate(t, env, 'a')
  const b = candidate(t, env, 'b')
  let leaders = 0
  let most = 0
  a.elector.start()
  b.elector.start()
  const watchLeaders = setInterval(() => {
    leaders = [a, b].filter((c) => c.elector.isLeader()).length
    most = Math.max(most, leaders)
  }, 1)
  t.teardown(() => clearInterval(watchLeaders))
  await eventually(t, 'a leader', () => a.elector.isLeader() || b.elector.isLeader())
  const [leader, follower] = a.elector.isLeader() ? [a, b] : [b, a]
  const start = leader.requests() + follower.requests()
  await eventually(t, 'twenty more tries', () => leader.requests() + follower.requests() > start + 20)
  t.equal(most, 1, 'never two leaders at once')
  t.ok(leader.elector.isLeader())
  t.notOk(follower.elector.isLeader())
  t.same(leader.events, [`leader ${leader.elector.identity}`, 'started'])
  t.same(follower.events, [`leader ${leader.elector.identity}`])
  t.equal(follower.elector.leader(), leader.elector.identity)
  const lease = await env.client.get<Lease>(LEASE)
  t.equal(lease.spec?.holderIdentity, leader.elector.identity)
  t.equal(lease.spec?.leaseDurationSeconds, 15)
  t.equal(lease.spec?.leaseTransitions, 0)
  t.match(lease.spec?.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
  t.equal(leader.elector.lease?.spec?.holderIdentity, leader.elector.identity)
})

t.test('a leader that stops without releasing is replaced only after the lease duration', async (t) => {
  const env = await setup(t)
  const a = candidate(t, env, 'a')
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  const b = candidate(t, env, 'b')
  b.elector.start()
  await eventually(t, 'b to see a', () => b.elector.leader() === 'a')
  await a.elector.stop()
  const before = b.requests()
  await eventually(t, 'b to try ten more times', () => b.requests() > before + 10)
  t.notOk(b.elector.isLeader(), 'the record is still valid: b waits')
  env.clock.advance(14_000)
  const again = b.requests()
  await eventually(t, 'b to try ten more times', () => b.requests() > again + 10)
  t.notOk(b.elector.isLeader(), 'one second short of the lease duration')
  env.clock.advance(1_001)
  await eventually(t, 'b to lead', () => b.elector.isLeader())
  const lease = await env.client.get<Lease>(LEASE)
  t.equal(lease.spec?.holderIdentity, 'b')
  t.equal(lease.spec?.leaseTransitions, 1)
  t.same(a.events, ['leader a', 'started'], 'stop is not a loss: no onStoppedLeading')
})

t.test('a leader that releases is replaced at the follower\'s next try', async (t) => {
  const env = await setup(t)
  const a = candidate(t, env, 'a')
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  const b = candidate(t, env, 'b')
  b.elector.start()
  await eventually(t, 'b to see a', () => b.elector.leader() === 'a')
  t.equal(await a.elector.release(), true)
  t.notOk(a.elector.isLeader())
  // The clock does not move: only the release lets b in.
  await eventually(t, 'b to lead', () => b.elector.isLeader())
  const lease = await env.client.get<Lease>(LEASE)
  t.equal(lease.spec?.holderIdentity, 'b')
  t.equal(lease.spec?.leaseDurationSeconds, 15)
  t.equal(lease.spec?.leaseTransitions, 1)
  t.notOk(a.events.includes('stopped'), 'release is not a loss')
})

t.test('a leader that cannot renew within the deadline stops leading', async (t) => {
  const env = await setup(t)
  const errors: string[] = []
  const a = candidate(t, env, 'a', { onError: (e) => errors.push(e.message) })
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  env.sb.faults.set({ errorRate: 1, resources: ['leases'] })
  await eventually(t, 'failed renewals', () => errors.length >= 3)
  t.ok(a.elector.isLeader(), 'still within the renew deadline')
  env.clock.advance(10_000)
  await eventually(t, 'a to give up', () => !a.elector.isLeader())
  env.sb.faults.set({})
  t.same(a.events.filter((e) => e === 'started' || e === 'stopped'), ['started', 'stopped'])
  t.equal(await a.elector.release(), false, 'nothing to release after a loss')
})

t.test('a renewal that loses to another writer reads the Lease again and yields to a valid holder after the deadline, never overwriting it (client-go\'s slow path)', async (t) => {
  const env = await setup(t)
  const a = candidate(t, env, 'a')
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  const lease = await env.client.get<Lease>(LEASE)
  // Another writer with a valid record (e.g. after a network partition healed).
  await env.client.replace({ ...lease, spec: { ...lease.spec, holderIdentity: 'intruder' } }).catch(async () => {
    const fresh = await env.client.get<Lease>(LEASE)
    await env.client.replace({ ...fresh, spec: { ...fresh.spec, holderIdentity: 'intruder' } })
  })
  await eventually(t, 'a to read the intruder after its update conflicted', () => a.elector.leader() === 'intruder')
  const conflicts = env.sb.requests.log().filter((r) => r.userAgent === 'leader-test/a' && r.verb === 'update' && r.code === 409)
  t.ok(conflicts.length >= 1, 'the optimistic update conflicted')
  t.ok(a.elector.isLeader(), 'still leading within the renew deadline')
  env.clock.advance(10_000)
  await eventually(t, 'a to give up', () => !a.elector.isLeader())
  t.ok(a.events.includes('stopped'))
  t.equal((await env.client.get<Lease>(LEASE)).spec?.holderIdentity, 'intruder', 'a never overwrote a valid record')
})

t.test('a leader renews with one optimistic update of the Lease it last wrote, reading it only at the start (client-go)', async (t) => {
  const env = await setup(t)
  const a = candidate(t, env, 'a')
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  const verbs = (): Record<string, number> => {
    const n: Record<string, number> = {}
    for (const r of env.sb.requests.log()) if (r.userAgent === 'leader-test/a') n[r.verb] = (n[r.verb] ?? 0) + 1
    return n
  }
  const before = verbs()
  await eventually(t, 'twenty renewals', () => (verbs().update ?? 0) >= (before.update ?? 0) + 20)
  await a.elector.stop()
  const after = verbs()
  t.equal(after.get ?? 0, before.get ?? 0, 'no GET while renewing: the Lease last written is the one updated')
  t.ok((after.update ?? 0) - (before.update ?? 0) >= 20, 'one update per renewal')
  t.equal((await env.client.get<Lease>(LEASE)).spec?.holderIdentity, 'a')
})

t.test('a leader whose renewal hangs steps down at the renew deadline by its own timer, the request aborted (client-go\'s context)', async (t) => {
  const env = await setup(t)
  const errors: string[] = []
  // Real time throughout: the step-down must not need any answer from the network.
  const a = candidate(t, { ...env, clock: realClock }, 'a', { leaseDurationMs: 1_500, renewDeadlineMs: 800, retryPeriodMs: 100, onError: (e) => errors.push(e.message) })
  a.elector.start()
  await eventually(t, 'a to lead', () => a.elector.isLeader())
  await eventually(t, 'a renewal', () => (env.sb.requests.counts().byUserAgent['leader-test/a'] ?? 0) >= 3)
  env.sb.faults.set({ paused: true })
  t.teardown(() => env.sb.faults.set({}))
  await eventually(t, 'a to step down while the server still holds its renewal', () => a.events.includes('stopped'))
  t.ok(env.sb.faults.get().paused, 'the server never answered')
  t.notOk(a.elector.isLeader())
  t.ok(errors.some((m) => /aborted/.test(m)), 'the hanging renewal was aborted')
  t.equal(await a.elector.release(), false, 'nothing to release after a loss')
})
