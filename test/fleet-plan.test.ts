/** The plan's classes, totals and the hold of a CR that moved since it was planned, as data (fleet/plan.ts). */
import t from 'tap'
import { classify, observedOf, parseClasses, PLAN_CLASSES, stillAsPlanned, totals, type ComparedCr, type ObjectPrediction, type PlannedCr } from '../operator/fleet/plan.ts'

const object = (kind: string, action: ObjectPrediction['action'], extra: Partial<ObjectPrediction> = {}): ObjectPrediction => ({ apiVersion: 'v1', kind, namespace: 'default', name: 'x', action, podsRestart: false, ...extra })
const cr = (objects: ObjectPrediction[], extra: Partial<ComparedCr> = {}): ComparedCr => ({ memcached: 'default/x', inCluster: true, objects, ...extra })

t.test('a CR takes the most severe class of its objects; an error its own', async (t) => {
  t.equal(classify(cr([])), 'none')
  t.equal(classify(cr([object('Service', 'none'), object('ServiceMonitor', 'omit')])), 'none', 'an optional kind left out is not a change')
  t.equal(classify(cr([object('Service', 'update'), object('ConfigMap', 'create')])), 'update')
  t.equal(classify(cr([object('Service', 'update'), object('Deployment', 'update', { podsRestart: true })])), 'restart')
  t.equal(classify(cr([object('Deployment', 'update', { podsRestart: true }), object('PodDisruptionBudget', 'prune')])), 'prune')
  t.equal(classify(cr([object('PodDisruptionBudget', 'prune'), object('Deployment', 'recreate', { podsRestart: true })])), 'recreate')
  t.equal(classify(cr([object('Deployment', 'recreate'), object('Service', 'conflict')])), 'conflict')
  t.equal(classify(cr([], { error: 'spec.size: must be >= 0', invalid: true })), 'invalid')
  t.equal(classify(cr([], { error: 'connection refused' })), 'error')
})

t.test('totals count every class, zeros included', async (t) => {
  const counted = totals([{ class: 'none' }, { class: 'restart' }, { class: 'restart' }])
  t.same(Object.keys(counted), [...PLAN_CLASSES])
  t.match(counted, { none: 1, restart: 2, update: 0, error: 0 })
})

t.test('--fail-on takes known classes only', async (t) => {
  t.same(parseClasses('invalid, conflict,,recreate'), ['invalid', 'conflict', 'recreate'])
  t.same(parseClasses(''), [])
  t.throws(() => parseClasses('invalid,boom'), { message: 'unknown class "boom": the classes are none, update, restart, prune, recreate, conflict, invalid, error' })
})

t.test('a CR is held when its objects were created, deleted or changed since the plan, or its render differs', async (t) => {
  const live = { uid: 'u1', resourceVersion: '10', hash: 'h1' }
  const planned: PlannedCr = {
    ...cr([object('Deployment', 'update', { podsRestart: true, live, desiredHash: 'd1' }), object('ConfigMap', 'create', { desiredHash: 'd2' }), object('PodDisruptionBudget', 'prune', { live: { uid: 'u3', resourceVersion: '3', hash: 'h3' } })], { generation: 2, resourceVersion: '20' }),
    class: 'prune',
  }
  t.same(stillAsPlanned(planned, observedOf(planned)), [], 'the plan itself is as planned')
  const moved = observedOf(planned)
  const objects = new Map(moved.objects)
  objects.set('Deployment/default/x', { uid: 'u1', hash: 'h2' })
  objects.set('ConfigMap/default/x', { uid: 'u9', hash: 'h9' })
  objects.delete('PodDisruptionBudget/default/x')
  const desired = new Map(moved.desired)
  desired.set('ConfigMap/default/x', 'd9')
  t.same(stillAsPlanned(planned, { ...moved, generation: 3, objects, desired }), [
    'the Memcached changed (generation 2 → 3)',
    'Deployment/default/x: changed since the plan',
    'ConfigMap/default/x: created since the plan',
    'ConfigMap/default/x: renders differently than planned',
    'PodDisruptionBudget/default/x: deleted since the plan',
  ])
  const recreated = new Map(moved.objects)
  recreated.set('Deployment/default/x', { uid: 'u2', hash: 'h1' })
  t.same(stillAsPlanned(planned, { ...moved, objects: recreated }), ['Deployment/default/x: changed since the plan'], 'another uid is another object')
  t.same(stillAsPlanned(planned, { ...moved, generation: undefined }), ['the Memcached changed (generation 2 → gone)'])
})
