/** The work queue, on a fake clock: deduplication, one worker per key, delays, backoff, shutdown. */
import t from 'tap'
import { WorkQueue, type QueueHooks } from '../operator/controller/queue.ts'
import { FakeClock, Backoff, backoffDelay, realClock } from '../operator/controller/clock.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { PRIORITY, updatePriority } from '../operator/reconcile/controller.ts'

function queue(opts: ConstructorParameters<typeof WorkQueue>[0] = {}): { q: WorkQueue; clock: FakeClock } {
  const clock = new FakeClock(1_000)
  return { q: new WorkQueue({ clock, random: () => 0, ...opts }), clock }
}

/** Whether a promise has settled after pending microtasks ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  void p.then(() => (done = true))
  await new Promise((r) => setImmediate(r))
  return done
}

t.test('a key is queued once however many adds', async (t) => {
  const { q } = queue()
  q.add('a')
  q.add('b')
  q.add('a')
  q.add('a')
  t.equal(q.length, 2)
  t.equal(await q.get(), 'a')
  t.equal(await q.get(), 'b')
  t.equal(q.length, 0)
})

t.test('a key is never held by two workers; re-added while processing it comes back after done', async (t) => {
  const { q } = queue()
  q.add('a')
  const first = await q.get()
  t.equal(first, 'a')
  q.add('a')
  q.add('a')
  t.equal(q.length, 0, 'not handed to a second worker while processing')
  const second = q.get()
  t.notOk(await settled(second), 'the second worker waits')
  q.done('a')
  t.equal(await second, 'a', 'processed again after done, once')
  q.done('a')
  t.equal(q.length, 0)
  t.equal(q.inFlight, 0)
  q.done('never-got')
  t.equal(q.inFlight, 0, 'done of an unknown key is ignored')
})

t.test('priorities: the highest first, first come first served within one (controller-runtime pkg/controller/priorityqueue)', async (t) => {
  const { q } = queue()
  q.add('resync-1', -100)
  q.add('change-1')
  q.add('resync-2', -100)
  q.add('change-2', 0)
  q.add('urgent', 5)
  t.equal(q.length, 5)
  const order: string[] = []
  for (let i = 0; i < 5; i++) order.push((await q.get()) as string)
  t.same(order, ['urgent', 'change-1', 'change-2', 'resync-1', 'resync-2'])
  t.equal(q.length, 0)
})

t.test('a waiting key added again at a higher priority moves up (the maximum wins); at a lower one it stays', async (t) => {
  const { q } = queue()
  q.add('a', -100)
  q.add('b', -100)
  q.add('c')
  q.add('b', 0)
  t.equal(q.length, 3, 'moved, not duplicated')
  q.add('c', -100)
  t.equal(await q.get(), 'c', 'a lower priority does not demote it')
  t.equal(await q.get(), 'b', 'b now waits with the changes, behind c')
  t.equal(await q.get(), 'a')
  t.equal(q.length, 0)
  const next = q.get()
  t.notOk(await settled(next), 'the place b left is not handed out again')
  q.add('d', -100)
  t.equal(await next, 'd')
})

t.test('a key added while it is processed comes back at the highest priority it was added with', async (t) => {
  const { q } = queue()
  q.add('a')
  t.equal(await q.get(), 'a')
  q.add('a', -100)
  q.add('a', 0)
  q.add('a', -100)
  q.add('z', -100)
  q.add('y')
  q.done('a')
  t.equal(await q.get(), 'y')
  t.equal(await q.get(), 'a', 'at 0, ahead of z, though it was first added again at -100')
  t.equal(await q.get(), 'z')
  q.done('a')
  q.add('a', -100)
  q.add('x')
  t.equal(await q.get(), 'x', 'a later add of a processed key starts from its own priority')
  t.equal(await q.get(), 'a')
})

t.test('a long line is served in order across its compaction', async (t) => {
  const { q } = queue()
  const n = 5000
  for (let i = 0; i < n; i++) q.add(`k${i}`)
  // Every other key moved up and back into the line's end: the stale places are skipped.
  for (let i = 0; i < n; i += 2) q.add(`k${i}`, 1)
  const got: string[] = []
  for (let i = 0; i < n; i++) got.push((await q.get()) as string)
  const evens = Array.from({ length: n / 2 }, (_, i) => `k${2 * i}`)
  const odds = Array.from({ length: n / 2 }, (_, i) => `k${2 * i + 1}`)
  t.same(got, [...evens, ...odds])
  t.equal(q.length, 0)
})

t.test('a Memcached\'s update: a resync is queued behind the changes, a new generation or a deletion is a change, the operator\'s own status write is nothing', async (t) => {
  const cr = (name: string, generation: number, extra: Partial<KubeObject['metadata']> = {}, status?: unknown): KubeObject => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'd', generation, ...extra }, spec: { size: 3 }, ...(status ? { status } : {}) })
  const a = cr('a', 1)
  t.equal(updatePriority(a, a), PRIORITY.resync, 'the informer hands the same object: a resync')
  t.equal(updatePriority(cr('b', 1), cr('b', 2)), PRIORITY.changed, 'a new generation')
  t.equal(updatePriority(cr('c', 1), cr('c', 1, { deletionTimestamp: '2026-11-27T00:00:00Z' })), PRIORITY.changed, 'deleting')
  t.equal(updatePriority(cr('d', 1), cr('d', 1, {}, { nodes: ['x'] })), undefined, 'a status write reconciles nothing')
  t.equal(updatePriority(cr('e', 1), { ...cr('e', 1), metadata: { ...cr('e', 1).metadata, labels: { team: 'a' } } }), PRIORITY.changed, 'a label: the platform\'s overlays may select it now')
  // The controller's informer handlers, as they queue: three resyncs, then one CR's change.
  const { q } = queue()
  for (const name of ['r1', 'r2', 'r3']) {
    const o = cr(name, 1)
    q.add(`d/${name}`, updatePriority(o, o))
  }
  q.add('d/r3', updatePriority(cr('r3', 1), cr('r3', 2)))
  q.add('d/new', PRIORITY.changed)
  const order: string[] = []
  for (let i = 0; i < 4; i++) order.push((await q.get()) as string)
  t.same(order, ['d/r3', 'd/new', 'd/r1', 'd/r2'], 'the changed CR and the new one before the resyncs; r3 not twice')
})

t.test('waiting workers are served in order', async (t) => {
  const { q } = queue()
  const w1 = q.get()
  const w2 = q.get()
  q.add('x')
  q.add('y')
  t.equal(await w1, 'x')
  t.equal(await w2, 'y')
})

t.test('addAfter delays a key; the sooner of two delays wins', async (t) => {
  const { q, clock } = queue()
  q.addAfter('a', 100)
  q.addAfter('a', 500)
  q.addAfter('b', 50)
  q.addAfter('c', 0)
  t.equal(q.length, 1, 'a zero delay adds at once')
  t.equal(await q.get(), 'c')
  t.equal(q.delayed, 2)
  clock.advance(49)
  t.equal(q.length, 0)
  clock.advance(1)
  t.equal(q.length, 1)
  t.equal(await q.get(), 'b')
  clock.advance(50)
  t.equal(await q.get(), 'a')
  clock.advance(1_000)
  t.equal(q.length, 0, 'the later delay of a was dropped')
  q.addAfter('d', 300)
  q.addAfter('d', 30)
  clock.advance(30)
  t.equal(await q.get(), 'd', 'a sooner addAfter moves a waiting key forward')
})

t.test('addRateLimited backs off exponentially per key, capped, until forget', async (t) => {
  const { q } = queue({ rateLimiter: { baseMs: 5, maxMs: 100, jitter: 0 } })
  const delays = [1, 2, 3, 4, 5, 6, 7].map(() => q.addRateLimited('a'))
  t.same(delays, [5, 10, 20, 40, 80, 100, 100])
  t.equal(q.numRequeues('a'), 7)
  t.equal(q.numRequeues('b'), 0, 'keys back off independently')
  t.equal(q.addRateLimited('b'), 5)
  q.forget('a')
  t.equal(q.numRequeues('a'), 0)
  t.equal(q.addRateLimited('a'), 5, 'forget starts over')
})

t.test('the default backoff is controller-runtime\'s 5 ms to 1000 s, with jitter', async (t) => {
  const low = new WorkQueue({ clock: new FakeClock(), random: () => 0 })
  const high = new WorkQueue({ clock: new FakeClock(), random: () => 0.999 })
  t.equal(low.addRateLimited('k'), 5)
  const d = high.addRateLimited('k')
  t.ok(d > 5 && d < 5.5, `jitter adds up to 10% (${d})`)
  for (let i = 0; i < 40; i++) low.addRateLimited('k')
  t.equal(low.addRateLimited('k'), 1_000_000)
  low.shutdown()
  high.shutdown()
})

t.test('a Retry-After is a floor of the delay', async (t) => {
  const { q, clock } = queue()
  t.equal(q.addRateLimited('a', { minDelayMs: 7_000 }), 7_000)
  clock.advance(6_999)
  t.equal(q.length, 0)
  clock.advance(1)
  t.equal(q.length, 1)
  t.equal(q.addRateLimited('b', { minDelayMs: 1 }), 5, 'a smaller floor leaves the backoff')
})

t.test('shutdown releases waiting workers, drops queued keys; drain waits for in-flight keys', async (t) => {
  const { q, clock } = queue()
  q.add('busy')
  t.equal(await q.get(), 'busy')
  q.add('queued')
  q.addAfter('later', 10)
  const idle = q.get()
  t.equal(await idle, 'queued')
  const waiting = q.get()
  q.shutdown()
  q.shutdown()
  t.ok(q.shuttingDown)
  t.equal(await waiting, undefined)
  t.equal(await q.get(), undefined)
  const drained = q.drain()
  t.notOk(await settled(drained), 'two keys still in flight')
  q.add('busy')
  q.done('busy')
  t.notOk(await settled(drained))
  q.done('queued')
  t.ok(await settled(drained))
  t.equal(q.length, 0, 'nothing was queued again after shutdown')
  clock.advance(100)
  t.equal(q.length, 0, 'delayed keys were dropped')
  t.equal(q.addRateLimited('x'), 5)
  t.equal(q.delayed, 0)
  await q.drain()
})

t.test('hooks observe adds, depth, retries, waiting and working time', async (t) => {
  const seen = { adds: 0, retries: 0, depth: [] as number[], latency: [] as number[], work: [] as number[] }
  const hooks: QueueHooks = {
    add: () => seen.adds++,
    retry: () => seen.retries++,
    depth: (n) => seen.depth.push(n),
    queueLatency: (s) => seen.latency.push(s),
    workDuration: (s) => seen.work.push(s),
  }
  const { q, clock } = queue({ hooks, name: 'memcached' })
  t.equal(q.name, 'memcached')
  q.add('a')
  q.add('a')
  q.add('b')
  clock.advance(2_000)
  const a = await q.get()
  clock.advance(500)
  q.done(a ?? '')
  q.addRateLimited('a')
  clock.advance(5)
  t.equal(seen.adds, 3, 'deduplicated adds are not counted')
  t.equal(seen.retries, 1)
  t.same(seen.depth, [1, 2, 1, 2])
  t.same(seen.latency, [2])
  t.same(seen.work, [0.5])
})

t.test('clock helpers', async (t) => {
  const b = new Backoff({ initialMs: 100, maxMs: 1_000, factor: 3, jitter: 0 })
  t.same([b.next(), b.next(), b.next(), b.next()], [100, 300, 900, 1_000])
  t.equal(b.attempts, 4)
  b.reset()
  t.equal(b.next(), 100)
  t.equal(backoffDelay(5_000, { initialMs: 1, maxMs: 50 }, () => 0.5), 50, 'huge attempts stay capped')
  const clock = new FakeClock()
  const fired: string[] = []
  const h = clock.setTimeout(() => fired.push('cancelled'), 10)
  clock.setTimeout(() => fired.push('late'), 20)
  clock.setTimeout(() => {
    fired.push('early')
    clock.setTimeout(() => fired.push('nested'), 1)
  }, 5)
  clock.clearTimeout(h)
  t.equal(clock.pending, 2)
  clock.advance(25)
  t.same(fired, ['early', 'nested', 'late'])
  t.equal(clock.now(), 25)
  const real = await new Promise<number>((resolve) => {
    const start = realClock.now()
    const x = realClock.setTimeout(() => resolve(realClock.now() - start), 1)
    t.ok(x)
  })
  t.ok(real >= 0)
  realClock.clearTimeout(realClock.setTimeout(() => t.fail('cleared timers never fire'), 1))
  await new Promise((r) => setTimeout(r, 5))
})
