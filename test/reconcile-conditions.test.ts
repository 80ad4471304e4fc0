import t from 'tap'
import type { Condition } from '../operator/api/memcached.ts'
import { CONDITION_TYPES, REASONS, findCondition, isConditionTrue, rfc3339, setCondition } from '../operator/reconcile/conditions.ts'

const t0 = new Date('2026-11-21T10:00:00.123Z')
const t1 = new Date('2026-11-21T11:00:00Z')

t.test('times are RFC 3339 UTC seconds, as metav1.Time is written', async (t) => {
  t.equal(rfc3339(t0), '2026-11-21T10:00:00Z')
})

t.test('a new condition is appended with the transition time now', async (t) => {
  const list = setCondition(undefined, { type: 'Available', status: 'False', reason: REASONS.ReplicasNotReady, message: '0/3', observedGeneration: 2 }, t0)
  t.same(list, [{ type: 'Available', status: 'False', reason: 'ReplicasNotReady', message: '0/3', lastTransitionTime: '2026-11-21T10:00:00Z', observedGeneration: 2 }])
  t.same(setCondition(list, { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' }, t0).map((c) => c.type), ['Available', 'Degraded'])
  t.notOk('observedGeneration' in (setCondition([], { type: 'X', status: 'True', reason: 'R', message: '' }, t0)[0] as Condition), 'no observedGeneration unless given')
})

t.test('lastTransitionTime moves only when the status changes', async (t) => {
  const start = setCondition([], { type: 'Available', status: 'False', reason: 'ReplicasNotReady', message: '0/3' }, t0)
  const sameStatus = setCondition(start, { type: 'Available', status: 'False', reason: 'ReplicasNotReady', message: '2/3', observedGeneration: 3 }, t1)
  t.equal(sameStatus[0]?.lastTransitionTime, '2026-11-21T10:00:00Z', 'message and generation changed, status did not')
  t.equal(sameStatus[0]?.message, '2/3')
  const flipped = setCondition(sameStatus, { type: 'Available', status: 'True', reason: 'AllReplicasReady', message: '3/3' }, t1)
  t.equal(flipped[0]?.lastTransitionTime, '2026-11-21T11:00:00Z')
  t.equal(flipped.length, 1, 'replaced in place')
  t.same(start[0]?.message, '0/3', 'the input list is not modified')
})

t.test('reasons must be valid condition reasons; long messages are cut', async (t) => {
  for (const reason of ['', 'has space', '1Leading', 'trailing:', 'x'.repeat(1025)]) t.throws(() => setCondition([], { type: 'A', status: 'True', reason, message: '' }, t0), /invalid condition reason/, JSON.stringify(reason.slice(0, 20)))
  for (const reason of Object.values(REASONS)) t.doesNotThrow(() => setCondition([], { type: 'A', status: 'True', reason, message: '' }, t0), reason)
  const long = setCondition([], { type: 'A', status: 'True', reason: 'R', message: 'm'.repeat(40000) }, t0)[0] as Condition
  t.equal(long.message.length, 32768)
  t.ok(long.message.endsWith('...'))
})

t.test('find and test conditions by type', async (t) => {
  const list = setCondition(setCondition([], { type: CONDITION_TYPES.Available, status: 'True', reason: 'AllReplicasReady', message: '' }, t0), { type: CONDITION_TYPES.Degraded, status: 'False', reason: 'AsExpected', message: '' }, t0)
  t.equal(findCondition(list, 'Degraded')?.reason, 'AsExpected')
  t.equal(findCondition(list, 'Progressing'), undefined)
  t.equal(findCondition(undefined, 'Available'), undefined)
  t.ok(isConditionTrue(list, 'Available'))
  t.notOk(isConditionTrue(list, 'Degraded'))
  t.notOk(isConditionTrue(list, 'Progressing'))
})
