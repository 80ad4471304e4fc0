/**
 * Leadership is timed on the monotonic clock, as client-go's is (Go's time.Time carries a
 * monotonic reading, and `time.Since` uses it): a wall clock stepped by NTP or a resumed VM
 * neither extends a leader's term past its renew deadline nor shortens a holder's lease in a
 * follower's eyes. Only the Lease's renewTime/acquireTime (written for humans) are wall time.
 */
import t, { type Test } from 'tap'
import { KubeConfig } from '@kubernetes/client-node'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { KubeClient } from '../operator/controller/client.ts'
import { LeaderElector, type Lease } from '../operator/controller/leader.ts'
import { FakeClock, realClock, type Clock } from '../operator/controller/clock.ts'

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'op-leader' }

/** Real timers; a wall clock and a monotonic clock the test moves separately. */
function twoClocks(): Clock & { wall: number; mono: number } {
  const c = {
    wall: Date.UTC(2026, 10, 21),
    mono: 1_000,
    now: () => c.wall,
    monotonic: () => c.mono,
    setTimeout: realClock.setTimeout,
    clearTimeout: realClock.clearTimeout,
  }
  return c
}

async function setup(t: Test): Promise<{ sb: Sandbox; kc: KubeConfig }> {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kc = new KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  return { sb, kc }
}

function elector(t: Test, kc: KubeConfig, clock: Clock, identity: string, events: string[]): LeaderElector {
  const client = new KubeClient(kc, { userAgent: `leader-clock-test/${identity}` })
  const e = new LeaderElector({ client, namespace: 'default', name: 'op-leader', identity, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 10, clock, onStartedLeading: () => events.push('started'), onStoppedLeading: () => events.push('stopped'), onError: () => {} })
  t.teardown(async () => {
    await e.stop()
    client.close()
  })
  return e
}

async function until(t: Test, what: string, pred: () => boolean): Promise<void> {
  const end = Date.now() + 15_000
  while (!pred()) {
    if (Date.now() > end) return void t.fail(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

t.test('realClock measures elapsed time on performance.now(); a FakeClock\'s monotonic reading is its instant', async (t) => {
  const before = performance.now()
  const m = realClock.monotonic!()
  t.ok(m >= before && m <= performance.now())
  const f = new FakeClock(5)
  f.advance(10)
  t.equal(f.monotonic(), 15)
})

t.test('a leader that cannot renew steps down at the monotonic deadline although the wall clock was stepped back an hour', async (t) => {
  const { sb, kc } = await setup(t)
  const clock = twoClocks()
  const events: string[] = []
  const a = elector(t, kc, clock, 'a', events)
  a.start()
  await until(t, 'a to lead', () => a.isLeader())
  sb.faults.set({ errorRate: 1, resources: ['leases'] })
  t.teardown(() => sb.faults.set({}))
  const failing = sb.requests.log().length
  await until(t, 'failed renewals', () => sb.requests.log().slice(failing).filter((r) => r.code >= 500).length >= 3)
  clock.wall -= 3_600_000
  clock.mono += 10_000
  await until(t, 'a to step down', () => !a.isLeader())
  t.same(events, ['started', 'stopped'])
})

t.test('a wall clock stepped forward an hour does not let a follower take over a Lease its holder still renews within the lease duration', async (t) => {
  const { sb, kc } = await setup(t)
  const leaderClock = twoClocks()
  const followerClock = twoClocks()
  const aEvents: string[] = []
  const bEvents: string[] = []
  const a = elector(t, kc, leaderClock, 'a', aEvents)
  a.start()
  await until(t, 'a to lead', () => a.isLeader())
  // a stops renewing without releasing (a hung process): the record stays valid for 15 s.
  await a.stop()
  const b = elector(t, kc, followerClock, 'b', bEvents)
  b.start()
  await until(t, 'b to see a', () => b.leader() === 'a')
  followerClock.wall += 3_600_000
  followerClock.mono += 14_000
  const seen = sb.requests.log().length
  await until(t, 'b to try ten more times', () => sb.requests.log().slice(seen).filter((r) => r.userAgent === 'leader-clock-test/b').length >= 10)
  t.notOk(b.isLeader(), '14 s of the 15 s lease have passed on b\'s monotonic clock')
  followerClock.mono += 1_001
  await until(t, 'b to lead', () => b.isLeader())
  const observer = new KubeClient(kc, { userAgent: 'x' })
  t.teardown(() => observer.close())
  const lease = await observer.get<Lease>(LEASE)
  t.equal(lease.spec?.holderIdentity, 'b')
  t.equal(Date.parse(lease.spec?.renewTime ?? ''), followerClock.wall, 'renewTime is wall time')
})
