/**
 * Leadership that can never overlap, with two operator processes. Each talks to the sandbox
 * through its own proxy that tags its user agent; the leader's proxy can hold its Lease requests
 * (a connection to the API server that stalls for one client only). client-go bounds every
 * renewal by the renew deadline and controller-runtime exits when the lease is lost, so the old
 * leader stops writing before the new one may take over: in the sandbox's request log (in the
 * order the server handled them) the old leader's last write precedes the new leader's first.
 */
import t from 'tap'
import type { Sandbox } from '../operator/sandbox/index.ts'
import { MC, memcached, sleep, twoReplicas, waitConverged } from './fixtures/reliability/support.ts'

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection'])
const FAST = ['--leader-elect-lease-duration', '4s', '--leader-elect-renew-deadline', '3s', '--leader-elect-retry-period', '500ms']

/** Indexes in the request log (handling order) of the writes of a tagged process, with what they were. */
function writesBy(sb: Sandbox, tag: string): { at: number; what: string }[] {
  return sb.requests
    .log()
    .map((r, at) => ({ r, at }))
    .filter(({ r }) => r.userAgent?.endsWith(`(${tag})`) && WRITES.has(r.verb) && r.code < 400)
    .map(({ r, at }) => ({ at, what: `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''} ${r.name ?? ''}` }))
}

t.test('a leader whose Lease requests stall stops writing and exits 1 before a follower may take over (client-go renew deadline, controller-runtime exit)', async (t) => {
  const { chart, sb, c, proxies, a, b } = await twoReplicas(t, FAST)
  await b.waitFor(/leader observed/)
  for (let i = 0; i < 4; i++) await c.create(memcached(`fence-${i}`, { size: 1 }))
  await waitConverged(c, chart, 30_000)

  // The leader's Lease requests hang; everything else it sends still reaches the server, and it
  // is kept busy with changes until someone else leads.
  proxies.A.hold((_, path) => path.includes('/leases'))
  let busy = true
  const churn = (async () => {
    for (let n = 0; busy; n++) {
      await c.patch({ ...MC, namespace: 'default', name: `fence-${n % 4}` }, { spec: { size: 1 + (n % 3) } }, { type: 'merge' }).catch(() => {})
      await sleep(50)
    }
  })()
  await b.waitFor(/became the leader/, 40_000)
  await sleep(1_000)
  busy = false
  await churn
  let timer: NodeJS.Timeout | undefined
  const exit = await Promise.race([a.exited, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 30_000)))])
  clearTimeout(timer)
  t.equal(exit?.code, 1, 'the old leader exited 1 on losing its lease')
  t.ok(a.lines.some((l) => /lost the leader lease/.test(l)), 'and said why')
  proxies.A.hold(undefined)

  const ofA = writesBy(sb, 'A')
  const ofB = writesBy(sb, 'B')
  t.ok(ofA.some((w) => !/leases/.test(w.what)), 'the old leader wrote while it led')
  t.ok(ofB.length > 0, 'the new leader wrote')
  const lastA = ofA.at(-1)!
  const firstB = ofB[0]!
  t.ok(lastA.at < firstB.at, `the old leader's last write (${lastA.what}, #${lastA.at}) precedes the new leader's first (${firstB.what}, #${firstB.at})`)
  await waitConverged(c, chart, 30_000)
  await b.kill('SIGTERM')
  t.equal((await b.exited).code, 0)
})
