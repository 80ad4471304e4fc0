import { hostname } from 'node:os'
import t from 'tap'
import { EventAggregator, MAX_MESSAGE_BYTES, truncateUtf8, type CoreEvent, type EventAction, type EventSpec } from '../operator/reconcile/events.ts'

const at = (minutes: number) => new Date(Date.UTC(2026, 10, 21, 10, 0, 0) + minutes * 60_000)
const cr = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', namespace: 'team', uid: 'uid-1', resourceVersion: '5' }
const conflict: EventSpec = { involvedObject: cr, type: 'Warning', reason: 'OwnershipConflict', message: 'Service team/cache exists and has no controller' }

function created(a: EventAction): CoreEvent {
  if (!('create' in a)) throw new Error(`expected a create, got ${JSON.stringify(a)}`)
  return a.create
}

t.test('the first occurrence creates a core/v1 Event the way client-go writes it', async (t) => {
  const agg = new EventAggregator({ instance: 'memcached-operator-7d9f-abcde' })
  const e = created(agg.record({ ...conflict, action: 'Apply' }, at(0)))
  t.same(e, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `cache.${(BigInt(at(0).getTime()) * 1_000_000n).toString(16)}`, namespace: 'team' },
    involvedObject: cr,
    reason: 'OwnershipConflict',
    message: 'Service team/cache exists and has no controller',
    type: 'Warning',
    count: 1,
    firstTimestamp: '2026-11-21T10:00:00Z',
    lastTimestamp: '2026-11-21T10:00:00Z',
    source: { component: 'memcached-operator', host: 'memcached-operator-7d9f-abcde' },
    reportingComponent: 'memcached-operator',
    reportingInstance: 'memcached-operator-7d9f-abcde',
    action: 'Apply',
  })
  const plain = created(new EventAggregator({ component: 'other' }).record({ ...conflict, involvedObject: { ...cr, namespace: undefined } as never }, at(0)))
  t.same([plain.source, plain.reportingInstance, plain.metadata.namespace, 'action' in plain], [{ component: 'other', host: hostname() }, hostname(), 'default', false], 'the reporting instance is the host (the pod), not a constant')
})

t.test('repeats within the window are skipped and counted; the next emission patches the count', async (t) => {
  const agg = new EventAggregator()
  const first = created(agg.record(conflict, at(0)))
  t.same(agg.record(conflict, at(1)), { suppressed: true, name: first.metadata.name, count: 2 }, 'a resync one minute later: nothing sent')
  t.same(agg.record(conflict, at(9.9)), { suppressed: true, name: first.metadata.name, count: 3 })
  const a = agg.record(conflict, at(10))
  t.ok('patch' in a, 'ten minutes after the emission: a patch')
  if ('patch' in a) {
    t.same(a.patch, { namespace: 'team', name: first.metadata.name, count: 4, lastTimestamp: '2026-11-21T10:10:00Z' })
    t.same([a.event.count, a.event.firstTimestamp, a.event.lastTimestamp, a.event.metadata.name], [4, '2026-11-21T10:00:00Z', '2026-11-21T10:10:00Z', first.metadata.name], 'the full event, to create it if the server lost it')
  }
  t.same(agg.record(conflict, at(15)), { suppressed: true, name: first.metadata.name, count: 5 }, 'the window restarts at each emission')
  t.equal(agg.size, 1)
})

t.test('after the event TTL a new Event is created', async (t) => {
  const agg = new EventAggregator({ suppressForMs: 60_000, eventTtlMs: 30 * 60_000 })
  const first = created(agg.record(conflict, at(0)))
  t.ok('patch' in agg.record(conflict, at(20)))
  const again = created(agg.record(conflict, at(50)))
  t.not(again.metadata.name, first.metadata.name)
  t.same([again.count, again.firstTimestamp], [1, '2026-11-21T10:50:00Z'])
})

t.test('events differing in object, type, reason or message are aggregated apart', async (t) => {
  const agg = new EventAggregator()
  created(agg.record(conflict, at(0)))
  const variants: EventSpec[] = [
    { ...conflict, involvedObject: { ...cr, uid: 'uid-2' } },
    { ...conflict, type: 'Normal' },
    { ...conflict, reason: 'ApplyFailed' },
    { ...conflict, message: 'Deployment team/cache exists and has no controller' },
  ]
  for (const v of variants) created(agg.record(v, at(1)))
  t.equal(agg.size, 5)
  t.ok('suppressed' in agg.record({ ...conflict, involvedObject: { ...cr, resourceVersion: '6' } }, at(2)), 'a new resourceVersion of the same object is the same event')
})

t.test('event names are unique even within one millisecond, and valid for long object names', async (t) => {
  const agg = new EventAggregator()
  const names = new Set<string>()
  for (let i = 0; i < 5; i++) names.add(created(agg.record({ ...conflict, message: `m${i}` }, at(0))).metadata.name)
  t.equal(names.size, 5)
  const long = `${'a'.repeat(240)}.b-c`
  const e = created(agg.record({ ...conflict, involvedObject: { ...cr, name: long } }, at(0)))
  t.ok(e.metadata.name.length <= 253, `${e.metadata.name.length} characters`)
  t.match(e.metadata.name, /^a+\.[0-9a-f]+$/)
})

t.test('messages are cut to 1,024 bytes of UTF-8 without splitting a character', async (t) => {
  t.equal(truncateUtf8('short'), 'short')
  t.equal(truncateUtf8('x'.repeat(MAX_MESSAGE_BYTES)), 'x'.repeat(MAX_MESSAGE_BYTES))
  const ascii = truncateUtf8('x'.repeat(2000))
  t.equal(Buffer.byteLength(ascii), 1024)
  t.ok(ascii.endsWith('...'))
  const wide = truncateUtf8('é'.repeat(600))
  t.ok(Buffer.byteLength(wide) <= 1024)
  t.notOk(wide.includes('\uFFFD'), 'no broken character')
  t.equal(wide, `${'é'.repeat(510)}...`)
  t.equal(truncateUtf8('€€', 4), '...', 'nothing fits but the ellipsis')
  const e = created(new EventAggregator().record({ ...conflict, message: 'y'.repeat(5000) }, at(0)))
  t.equal(Buffer.byteLength(e.message), 1024)
})

t.test('memory is bounded and can be cleared per object or per event', async (t) => {
  const agg = new EventAggregator({ maxEntries: 2 })
  const a = created(agg.record({ ...conflict, message: 'a' }, at(0)))
  created(agg.record({ ...conflict, message: 'b' }, at(0)))
  t.ok('suppressed' in agg.record({ ...conflict, message: 'a' }, at(1)), 'a used again: b is the oldest')
  created(agg.record({ ...conflict, message: 'c' }, at(1)))
  t.equal(agg.size, 2)
  t.ok('create' in agg.record({ ...conflict, message: 'b' }, at(2)), 'b was forgotten')
  agg.forgetEvent(a.metadata.name)
  t.ok('create' in agg.record({ ...conflict, message: 'a' }, at(2)), 'a create that failed is tried again')
  t.equal(agg.forgetObject('uid-1'), 2)
  t.equal(agg.size, 0)
  t.equal(agg.forgetObject('uid-1'), 0)
})

t.test('returned events are copies', async (t) => {
  const agg = new EventAggregator()
  const e = created(agg.record(conflict, at(0)))
  e.count = 99
  e.involvedObject.name = 'changed'
  const p = agg.record(conflict, at(11))
  t.ok('patch' in p && p.event.count === 2 && p.event.involvedObject.name === 'cache')
})
