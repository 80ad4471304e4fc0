/** The pure parts of a rollout (fleet/rollout-waves.ts): waves, selectors, health, pins, settings. */
import t from 'tap'
import { countWaves, crKey, health, matches, personPin, pinOwners, ROLLOUT_MANAGER, settingsOf, takeWave, type FleetCr } from '../operator/fleet/rollout-waves.ts'

const cr = (name: string, labels: Record<string, string> = {}, namespace = 'default'): FleetCr => ({ metadata: { name, namespace, labels } })
const fleet = Array.from({ length: 10 }, (_, i) => cr(`mc-${i}`, i < 2 ? { tier: 'canary' } : { tier: 'main' }))

t.test('label selectors: matchLabels and each operator of matchExpressions', async (t) => {
  t.ok(matches(undefined, {}))
  t.ok(matches({ matchLabels: { a: '1' } }, { a: '1', b: '2' }))
  t.notOk(matches({ matchLabels: { a: '1' } }, { a: '2' }))
  t.ok(matches({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '2'] }] }, { a: '2' }))
  t.notOk(matches({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] }, {}))
  t.ok(matches({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, {}))
  t.notOk(matches({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, { a: '1' }))
  t.ok(matches({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, { a: '' }))
  t.notOk(matches({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, {}))
  t.notOk(matches({ matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { a: 'x' }))
})

t.test('waves: a selector, a share of the fleet rounded up, and a last wave for the rest', async (t) => {
  const waves = [{ selector: { matchLabels: { tier: 'canary' } } }, { percent: 25 }]
  t.same(takeWave(waves, 0, fleet, 10).map(crKey), ['default/mc-0', 'default/mc-1'])
  const rest = fleet.slice(2)
  t.same(takeWave(waves, 1, rest, 10).map(crKey), ['default/mc-2', 'default/mc-3', 'default/mc-4'], '25% of 10 is 3 (rounded up)')
  t.same(takeWave(waves, 2, rest.slice(3), 10).length, 5, 'past the declared waves: everything left')
  t.equal(countWaves(waves, fleet), 3)
  t.equal(countWaves([{ percent: 50 }, { percent: 50 }], fleet), 2, 'nothing left: no extra wave')
  t.equal(countWaves([], fleet), 1, 'no waves: one')
  t.equal(countWaves([{ selector: { matchLabels: { tier: 'none' } } }], fleet), 2, 'a wave that takes nothing still counts')
})

t.test('who pinned a CR: the rollout\'s field manager, or a person', async (t) => {
  const pinned = (manager: string): FleetCr => ({ metadata: { name: 'x', managedFields: [{ manager, operation: 'Apply', fieldsV1: { 'f:spec': { 'f:chartRevision': {} } } }, { manager: 'other', fieldsV1: { 'f:spec': { 'f:size': {} } } }] }, spec: { chartRevision: 'r' } })
  t.same(pinOwners(pinned(ROLLOUT_MANAGER)), [ROLLOUT_MANAGER])
  t.equal(personPin(pinned(ROLLOUT_MANAGER)), undefined)
  t.equal(personPin(pinned('kubectl-patch')), 'kubectl-patch')
  t.equal(personPin(cr('y')), undefined, 'no pin')
})

t.test('health: reconciled at its generation with the revision, Ready and Available', async (t) => {
  const conditions = (ready: string, available = 'True') => [
    { type: 'Available', status: available, reason: 'R', message: 'm', lastTransitionTime: '' },
    { type: 'Ready', status: ready, reason: 'RollingOut', message: 'waiting', lastTransitionTime: '' },
  ] as never
  const at = (status: FleetCr['status'], generation = 2): FleetCr => ({ metadata: { name: 'x', generation }, status })
  t.same(health(at({ observedGeneration: 2, chartRevision: 'r', conditions: conditions('True') }), 'r'), { healthy: true })
  t.match(health(at({ observedGeneration: 1, chartRevision: 'r', conditions: conditions('True') }), 'r'), { healthy: false, why: /generation 2 not yet reconciled/ })
  t.match(health(at({ observedGeneration: 2, chartRevision: 'q', conditions: conditions('True') }), 'r'), { healthy: false, why: 'runs q' })
  t.match(health(at({ observedGeneration: 2, chartRevision: 'r', conditions: conditions('False') }), 'r'), { healthy: false, why: 'Ready=False (RollingOut: waiting)' })
  t.match(health(at({ observedGeneration: 2, chartRevision: 'r', conditions: conditions('True', 'False') }), 'r'), { healthy: false, why: /^Available=False/ })
  t.match(health(at({ observedGeneration: 2, chartRevision: 'r' }), 'r'), { healthy: false, why: 'no Available condition' })
})

t.test('settings: defaults, and a clear error naming the field', async (t) => {
  t.same(settingsOf({ revision: 'r' }), { waves: [], maxInFlight: 1, bakeMs: 0, deadlineMs: 300_000 })
  t.same(settingsOf({ revision: 'r', bakeTime: '1m30s', healthDeadline: '10s', maxInFlight: 4 }), { waves: [], maxInFlight: 4, bakeMs: 90_000, deadlineMs: 10_000 })
  t.throws(() => settingsOf({ revision: 'r', bakeTime: 'soon' }), /spec\.bakeTime: invalid duration "soon"/)
  t.throws(() => settingsOf({ revision: 'r', maxInFlight: 0 }), /spec\.maxInFlight must be a positive integer/)
  t.throws(() => settingsOf({ revision: 'r', waves: [{ percent: 101 }] }), /spec\.waves\[0\]\.percent must be an integer from 1 to 100/)
})

t.test('hold reasons: the fresh plan of a CR against the one the rollout started with', async (t) => {
  const { holdReasons } = await import('../operator/fleet/rollout.ts')
  const object = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'x', action: 'update' as const, podsRestart: true, live: { uid: 'u', resourceVersion: '1', hash: 'h' }, desiredHash: 'd' }
  const planned = { memcached: 'default/x', inCluster: true, generation: 1, objects: [object], class: 'restart' as const }
  t.same(holdReasons(planned, planned), [], 'as planned: it moves')
  t.same(holdReasons(planned, { ...planned, class: 'recreate', objects: [{ ...object, action: 'recreate' }] }), ['its change is now recreate, planned restart'])
  t.same(holdReasons(planned, { ...planned, objects: [{ ...object, live: { ...object.live, hash: 'other' } }] }), ['Deployment/default/x: changed since the plan'])
  t.same(holdReasons(undefined, planned), ['it was not in the plan the rollout started with (created since)'])
  t.same(holdReasons(planned, { ...planned, class: 'conflict', objects: [{ ...object, action: 'conflict', reason: 'owned by helm' }] }), ['its change is conflict: Deployment x: owned by helm'])
  t.same(holdReasons(planned, { ...planned, class: 'invalid', error: 'size: must be >= 0', objects: [] }), ['its change is invalid: size: must be >= 0'])
})
