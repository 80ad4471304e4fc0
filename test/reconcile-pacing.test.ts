/** The fleet-wide budget of workload re-creations (reconcile/pacing.ts), alone. */
import pino from 'pino'
import t from 'tap'
import { ApiError, type KubeClient } from '../operator/controller/client.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { objectKey } from '../operator/reconcile/owner.ts'
import { planRecreations, RecreationPacer, type RecreationRequest } from '../operator/reconcile/pacing.ts'
import { immutableWorkloadField } from '../operator/reconcile/recreate.ts'
import { fakeCr, fakeReconciler, stamped } from './support/fake-reconciler.ts'

const ref = (name: string, kind = 'Deployment'): RenderedObject => ({ apiVersion: 'apps/v1', kind, metadata: { name, namespace: 'default' } })
const req = (name: string, owner = `uid-${name}`): RecreationRequest => ({ key: `apps/v1/Deployment/default/${name}`, owner, crKey: `default/${name}`, what: `Deployment default/${name}`, field: 'spec.selector', replaces: `old-${name}`, ref: ref(name) })

/** The refusal of a Deployment's selector change, as kube-apiserver words it (apps/validation ValidateDeploymentUpdate). */
const selectorRefusal = (name: string) => new ApiError(422, 'Invalid', `Deployment.apps "${name}" is invalid: spec.selector: Invalid value: {}: field is immutable`, { causes: [{ reason: 'FieldValueInvalid', field: 'spec.selector', message: 'Invalid value: {}: field is immutable' }] })

function pacer(max: number, timeoutMs = 1000) {
  let now = 0
  const freed: string[] = []
  const counts: [number, number][] = []
  const timedOut: string[] = []
  const p = new RecreationPacer({ max, timeoutMs, now: () => now, onFree: (k) => freed.push(k), onChange: (q, f) => counts.push([q, f]), onTimeout: (s) => timedOut.push(s.what) })
  return { p, freed, counts, timedOut, advance: (ms: number) => (now += ms) }
}

t.test('one slot: the first is granted, the others wait in arrival order and keep their place when they ask again', async (t) => {
  const { p, counts } = pacer(1)
  t.same(p.request(req('a')), { granted: true })
  t.same(p.request(req('a')), { granted: true }, 'a slot held is granted again')
  t.same(p.request(req('b')), { granted: false, position: 1, queued: 1, inFlight: ['Deployment default/a'] })
  t.same(p.request(req('c')), { granted: false, position: 2, queued: 2, inFlight: ['Deployment default/a'] })
  t.match(p.request(req('c')), { granted: false, position: 2 }, 'asking again keeps the place')
  t.match(p.request(req('b')), { granted: false, position: 1 })
  t.same(p.counts(), { queued: 2, inFlight: 1 })
  t.same(counts.at(-1), [2, 1])
})

t.test('a released slot goes to the first in line, and only to it', async (t) => {
  const { p, freed } = pacer(1)
  p.request(req('a'))
  p.request(req('b'))
  p.request(req('c'))
  p.release(req('a').key)
  t.same(freed, ['default/b'], 'the first waiting CR is told')
  t.match(p.request(req('c')), { granted: false, position: 2 }, 'c does not jump ahead of b')
  t.same(p.request(req('b')), { granted: true })
  t.match(p.request(req('c')), { granted: false, position: 1, inFlight: ['Deployment default/b'] })
  p.release('not held')
  t.same(freed, ['default/b'], 'releasing what is not held tells nobody')
})

t.test('two slots: two at once, the third waits', async (t) => {
  const { p } = pacer(2)
  t.same(p.request(req('a')), { granted: true })
  t.same(p.request(req('b')), { granted: true })
  t.match(p.request(req('c')), { granted: false, position: 1, inFlight: ['Deployment default/a', 'Deployment default/b'] })
})

t.test('0 means no limit', async (t) => {
  const { p } = pacer(0)
  for (const n of ['a', 'b', 'c', 'd']) t.same(p.request(req(n)), { granted: true })
  t.same(p.counts(), { queued: 0, inFlight: 4 })
})

t.test('a bad budget is refused', async (t) => {
  t.throws(() => new RecreationPacer({ max: -1, timeoutMs: 1 }), /non-negative integer, not -1/)
  t.throws(() => new RecreationPacer({ max: 1.5, timeoutMs: 1 }), /not 1.5/)
})

t.test('a slot held past the timeout is given up and the next is told', async (t) => {
  const { p, freed, timedOut, advance } = pacer(1, 1000)
  p.request(req('a'))
  p.request(req('b'))
  advance(999)
  t.match(p.request(req('b')), { granted: false })
  advance(1)
  t.same(p.request(req('b')), { granted: true }, 'granted once a’s slot timed out')
  t.same(timedOut, ['Deployment default/a'])
  t.same(freed, ['default/b'])
})

t.test('a waiting request not asked again for five minutes is dropped', async (t) => {
  const { p, advance } = pacer(1, 3_600_000)
  p.request(req('a'))
  p.request(req('b'))
  advance(60_000)
  p.request(req('c'))
  advance(4 * 60_000)
  t.same(p.counts(), { queued: 1, inFlight: 1 }, 'b dropped, c (asked a minute later) kept')
})

t.test('withdraw drops a CR’s waiting requests, forget its slots too', async (t) => {
  const { p, freed } = pacer(1)
  p.request(req('a'))
  p.request(req('b'))
  p.request(req('c'))
  p.withdraw('uid-b')
  t.match(p.request(req('c')), { position: 1 })
  p.withdraw('uid-a')
  t.same(p.counts(), { queued: 1, inFlight: 1 }, 'withdraw leaves a slot held')
  t.same(p.held('uid-a').map((s) => s.what), ['Deployment default/a'])
  p.forget('uid-a')
  t.same(p.counts(), { queued: 1, inFlight: 0 })
  t.same(freed.at(-1), 'default/c')
})

t.test('immutableWorkloadField: a Deployment’s selector; a StatefulSet’s spec fields other than the mutable ones', async (t) => {
  t.equal(immutableWorkloadField('Deployment', ['.spec.replicas', '.spec.selector.matchLabels.app.kubernetes.io/name']), 'spec.selector')
  t.equal(immutableWorkloadField('Deployment', ['.spec.template.spec.containers[name="memcached"].image', '.metadata.labels.x']), undefined)
  t.equal(immutableWorkloadField('StatefulSet', ['.spec.podManagementPolicy']), 'spec.podManagementPolicy')
  t.equal(immutableWorkloadField('StatefulSet', ['.spec.serviceName']), 'spec.serviceName')
  t.equal(immutableWorkloadField('StatefulSet', ['.spec.replicas', '.spec.template.metadata.labels.a', '.spec.updateStrategy.type', '.spec.minReadySeconds', '.spec.ordinals.start', '.spec.persistentVolumeClaimRetentionPolicy.whenDeleted']), undefined)
  t.equal(immutableWorkloadField('Service', ['.spec.selector.a']), undefined, 'not a workload')
})

t.test('planRecreations: asks only for workloads that need it, gives back what it took when one must wait', async (t) => {
  const live = (name: string, selector: string, kind = 'Deployment'): KubeObject => ({ apiVersion: 'apps/v1', kind, metadata: { name, namespace: 'default', uid: `old-${name}` }, spec: { selector: { matchLabels: { app: selector } } } }) as KubeObject
  const want = (name: string, selector: string, kind = 'Deployment'): RenderedObject => ({ ...ref(name, kind), spec: { selector: { matchLabels: { app: selector } } } })
  const cr = (name: string) => ({ metadata: { name, namespace: 'default', uid: `uid-${name}` } })
  const key = (d: RenderedObject) => objectKey(d)
  const yes = () => true
  const no = () => false
  const { p } = pacer(1)

  const a = want('a', 'new')
  const granted = planRecreations(p, cr('a'), [a], new Map([[key(a), live('a', 'old')]]), yes, no)
  t.same(granted.granted.map((g) => [g.what, g.field, g.replaces]), [['Deployment default/a', 'spec.selector', 'old-a']])
  t.equal(granted.queued, undefined)

  const b = want('b', 'new')
  const queued = planRecreations(p, cr('b'), [b], new Map([[key(b), live('b', 'old')]]), yes, no)
  t.same(queued.granted, [])
  t.match(queued.queued, /^Deployment default\/b must be deleted and re-created \(spec\.selector cannot change in place\) and waits for its turn: 1 of 1 waiting; being re-created now: Deployment default\/a;/)

  t.same(planRecreations(p, cr('c'), [want('c', 'new')], new Map([[key(want('c', 'new')), live('c', 'old')]]), no, no), { granted: [] }, 'not asked when it may not be re-created')
  t.same(planRecreations(p, cr('c'), [want('c', 'new')], new Map([[key(want('c', 'new')), live('c', 'old')]]), yes, yes), { granted: [] }, 'not asked when unchanged since our apply')
  t.same(planRecreations(p, cr('c'), [want('c', 'same')], new Map([[key(want('c', 'same')), live('c', 'same')]]), yes, no), { granted: [] }, 'not asked when the selector is the same')
  t.same(planRecreations(p, cr('c'), [want('c', 'new')], new Map(), yes, no), { granted: [] }, 'not asked for a workload to create')
  t.same(p.counts(), { queued: 1, inFlight: 1 })

  // b no longer needs it (its render went back): its place is given up.
  t.same(planRecreations(p, cr('b'), [want('b', 'old')], new Map([[key(b), live('b', 'old')]]), yes, no), { granted: [] })
  t.same(p.counts(), { queued: 0, inFlight: 1 })

  // Two workloads of one CR, the second must wait: the first's slot is given back.
  const x = want('x', 'new')
  const y = want('y', 'new', 'StatefulSet')
  const two = pacer(2)
  two.p.request(req('other'))
  const res = planRecreations(two.p, cr('x'), [x, y], new Map<string, KubeObject>([[key(x), live('x', 'old')], [key(y), live('y', 'old', 'StatefulSet')]]), yes, no)
  t.match(res.queued, /^StatefulSet default\/y must be deleted and re-created \(spec\.selector cannot change in place\)/)
  t.same(two.p.counts(), { queued: 1, inFlight: 1 }, 'x’s slot given back while y waits')
})

t.test('a re-creation the plan did not foresee (the server refuses a field that looked unchanged) waits for a slot too: no delete, RecreationQueued', async (t) => {
  const cr = fakeCr('w')
  const stored = new Map<string, KubeObject>()
  const calls: string[] = []
  const statuses: unknown[] = []
  let n = 0
  // A webhook that refuses every change of the Deployment once it exists, as the selector's refusal words it.
  const client = {
    async apply(obj: KubeObject, opts: { subresource?: string }) {
      if (opts.subresource === 'status') {
        statuses.push(obj.status)
        return { ...cr, status: obj.status }
      }
      calls.push(`apply ${obj.kind}`)
      if (obj.kind === 'Deployment' && stored.has('Deployment')) throw selectorRefusal('w')
      stored.set(obj.kind, stamped(obj, ++n))
      return stored.get(obj.kind)
    },
    async create(obj: KubeObject) {
      calls.push(`create ${obj.kind}`)
      stored.set(obj.kind, stamped(obj, ++n))
      return stored.get(obj.kind)
    },
    async delete(ref: { kind: string }) {
      calls.push(`delete ${ref.kind}`)
      stored.delete(ref.kind)
      return { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Success' }
    },
  } as unknown as KubeClient
  const { p } = pacer(1)
  p.request(req('elsewhere', 'other-cr'))
  const { reconciler, recorded } = fakeReconciler({ cr, client, stored, pacer: p })
  const log = pino({ level: 'silent' })
  await reconciler.reconcile('default', 'w', log) // creates everything
  calls.length = 0
  const result = await reconciler.reconcile('default', 'w', log)
  t.same(result, { requeueAfterMs: 30_000 })
  t.notOk(calls.some((c) => c.startsWith('delete')), 'nothing deleted')
  t.ok(recorded.includes('Normal Updated: Updated Service default/w (.metadata.labels)'), 'what came before the workload in apply order was applied: only the plan keeps a CR from half-applying')
  t.match(recorded.find((r) => r.includes('RecreationQueued')), /^Normal RecreationQueued: Deployment default\/w must be deleted and re-created \(spec\.selector cannot change in place\) and waits for its turn: 1 of 1 waiting; being re-created now: Deployment default\/elsewhere/)
  t.match(statuses.at(-1), { conditions: [{ type: 'Available' }, { type: 'Progressing', status: 'True', reason: 'RecreationQueued' }] })
  t.same(p.counts(), { queued: 1, inFlight: 1 })
  p.release(req('elsewhere').key)
  await reconciler.reconcile('default', 'w', log)
  t.same(calls.filter((c) => c.startsWith('delete')), ['delete Deployment'], 'deleted once its turn came')
  reconciler.forget('cr-w')
  t.same(p.counts(), { queued: 0, inFlight: 0 }, 'a deleted CR gives its slot back')
})

t.test('a re-created workload whose name somebody else took meanwhile: OwnershipConflict, and the slot goes back at once', async (t) => {
  const cr = fakeCr('v')
  const stored = new Map<string, KubeObject>()
  const statuses: unknown[] = []
  let n = 0
  let deleted = false
  // Somebody else's Deployment, created between our delete and our re-creating apply.
  const theirs = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'v', namespace: 'default', uid: 'theirs', resourceVersion: '99' }, spec: {} } as KubeObject
  const client = {
    async apply(obj: KubeObject, opts: { subresource?: string }) {
      if (opts.subresource === 'status') {
        statuses.push(obj.status)
        return { ...cr, status: obj.status }
      }
      // The apply that can only create carries a fresh uid: an existing object refuses it, as kube-apiserver's ValidateObjectMetaUpdate does.
      if (obj.metadata.uid !== undefined) {
        if (obj.kind === 'Deployment' && deleted) throw new ApiError(422, 'Invalid', `Deployment.apps "v" is invalid: metadata.uid: Invalid value: "${obj.metadata.uid}": field is immutable`, { causes: [{ reason: 'FieldValueInvalid', field: 'metadata.uid', message: `Invalid value: "${obj.metadata.uid}": field is immutable` }] })
        stored.set(obj.kind, stamped(obj, ++n))
        return stored.get(obj.kind)
      }
      if (obj.kind === 'Deployment' && stored.has('Deployment')) throw selectorRefusal('v')
      return stored.get(obj.kind) ?? obj
    },
    async get() {
      return theirs
    },
    async delete() {
      deleted = true
      return { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Success' }
    },
  } as unknown as KubeClient
  const { p } = pacer(1)
  const { reconciler } = fakeReconciler({ cr, client, stored, pacer: p })
  const log = pino({ level: 'silent' })
  await reconciler.reconcile('default', 'v', log) // creates everything
  const result = await reconciler.reconcile('default', 'v', log)
  t.ok(deleted, 'deleted to re-create, its slot granted')
  t.same(result, { requeueAfterMs: 60_000 }, 'looked at again as an ownership conflict is')
  t.match(statuses.at(-1), { conditions: [{ type: 'Available' }, { type: 'Progressing' }, { type: 'Degraded', status: 'True', reason: 'OwnershipConflict' }] })
  t.same(p.counts(), { queued: 0, inFlight: 0 }, 'no replacement of ours will free the slot: it is given back at once')
})
