/**
 * Two operator processes with --leader-elect (default timings: 15 s lease, 10 s renew deadline,
 * 2 s retry). Each talks to the sandbox through its own proxy that tags its user agent, so the
 * sandbox's request log says which process sent each request. Only the leader writes; the
 * follower never writes anything but its attempts on the Lease; when the leader is SIGKILLed
 * (no release) the follower takes over once the lease expires and converges what changed.
 */
import t from 'tap'
import type { Sandbox } from '../operator/sandbox/index.ts'
import { MC, memcached, problems, sleep, twoReplicas, waitConverged } from './fixtures/reliability/support.ts'

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection'])
const LEASE = { group: 'coordination.k8s.io', resource: 'leases' }

/** Writes by a tagged process, leases apart. */
function writesBy(sb: Sandbox, tag: string): string[] {
  return sb.requests
    .log()
    .filter((r) => r.userAgent?.endsWith(`(${tag})`) && WRITES.has(r.verb) && !(r.group === LEASE.group && r.resource === LEASE.resource))
    .map((r) => `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''} ${r.name ?? ''}`)
}

/** The identity in a `leader observed` / `became the leader` log line. */
function leaderOf(line: string): string | undefined {
  return (JSON.parse(line) as { leader?: string }).leader
}

t.test('two replicas with leader election: only the leader writes; SIGKILL of the leader hands over within the lease duration', async (t) => {
  const { chart, sb, c, a, b } = await twoReplicas(t, [])
  await b.waitFor(/caches synced/)
  const aIdentity = leaderOf(await b.waitFor(/leader observed/))
  t.ok(aIdentity, 'the follower sees a leader')

  for (let i = 0; i < 6; i++) await c.create(memcached(`le-${i}`, { size: 1 + (i % 3) }))
  await waitConverged(c, chart, 30_000)
  t.ok(writesBy(sb, 'A').length >= 18, `the leader wrote (${writesBy(sb, 'A').length} writes)`)
  t.same(writesBy(sb, 'B'), [], 'the follower wrote nothing')
  const lease = await c.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'memcached-operator-leader' })
  t.equal((lease.spec as { holderIdentity?: string }).holderIdentity, aIdentity, 'the Lease names the leader')
  t.notOk(b.lines.some((l) => /became the leader/.test(l)), 'the follower did not lead')

  // The leader dies without releasing its lease, in the middle of a change.
  await c.patch({ ...MC, namespace: 'default', name: 'le-0' }, { spec: { size: 3 } }, { type: 'merge' })
  const killedAt = Date.now()
  await a.kill('SIGKILL')
  const writesOfA = writesBy(sb, 'A').length
  await c.create(memcached('le-new', { size: 2 }))
  await b.waitFor(/became the leader/, 40_000)
  const failoverMs = Date.now() - killedAt
  const ms = await waitConverged(c, chart, 30_000)
  t.same(await problems(c, chart), [], 'the new leader converged the change made while nobody led, and the new CR')
  t.equal(writesBy(sb, 'A').length, writesOfA, 'the dead leader wrote nothing more')
  t.ok(writesBy(sb, 'B').length > 0, 'the new leader wrote')
  const after = await c.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'memcached-operator-leader' })
  const holder = (after.spec as { holderIdentity?: string; leaseTransitions?: number }).holderIdentity
  t.ok(holder && holder !== aIdentity, 'the Lease changed hands')
  t.ok(((after.spec as { leaseTransitions?: number }).leaseTransitions ?? 0) >= 1, 'one more lease transition')
  t.comment(`figures: failover after SIGKILL of the leader ${failoverMs} ms (lease 15 s), convergence after takeover ${ms} ms`)
  await sleep(100)
  await b.kill('SIGTERM')
  t.equal((await b.exited).code, 0, 'the new leader stops cleanly on SIGTERM')
})
