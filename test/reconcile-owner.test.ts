import t from 'tap'
import type { Memcached } from '../operator/api/memcached.ts'
import { RenderError } from '../operator/render/errors.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { controllerOf, controllerRef, describeObject, isControlledBy, objectKey, ownershipConflicts, stampOwner, type LiveObject } from '../operator/reconcile/owner.ts'

const cr: Memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: 'team', uid: 'uid-cache', generation: 2 }, spec: { size: 3 } }

const deployment = (): RenderedObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cache', namespace: 'team', labels: { a: 'b' } }, spec: { replicas: 3 } })
const service = (): RenderedObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'cache', namespace: 'team' }, spec: { ports: [{ port: 11211 }] } })

const ref = (uid: string, extra: Partial<{ controller: boolean; name: string; kind: string }> = {}) => ({ apiVersion: 'cache.example.com/v1alpha1', kind: extra.kind ?? 'Memcached', name: extra.name ?? 'cache', uid, controller: extra.controller ?? true, blockOwnerDeletion: true })
const live = (obj: RenderedObject, refs?: ReturnType<typeof ref>[]): LiveObject => ({ ...obj, metadata: { ...obj.metadata, uid: `live-${obj.kind}`, resourceVersion: '7', ...(refs ? { ownerReferences: refs } : {}) } })

t.test('the controller reference names the CR by uid, with controller and blockOwnerDeletion', async (t) => {
  t.same(controllerRef(cr), { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: 'uid-cache', controller: true, blockOwnerDeletion: true })
})

t.test('a CR without uid cannot own objects', async (t) => {
  const { uid: _uid, ...meta } = cr.metadata
  t.throws(() => controllerRef({ ...cr, metadata: meta }), /has no metadata.uid/)
  t.throws(() => stampOwner([deployment()], { ...cr, metadata: { ...meta, uid: '' } }), /has no metadata.uid/)
})

t.test('stamping gives every object exactly the controller reference and leaves the input alone', async (t) => {
  const input = [deployment(), service()]
  const before = structuredClone(input)
  const out = stampOwner(input, cr)
  t.same(input, before, 'input unchanged')
  t.equal(out.length, 2)
  for (const o of out) t.same(o.metadata.ownerReferences, [controllerRef(cr)])
  t.same(out[0]?.metadata.labels, { a: 'b' }, 'other metadata kept')
  t.same(out[1]?.spec, { ports: [{ port: 11211 }] }, 'content kept')
  t.not(out[0]?.metadata.ownerReferences, out[1]?.metadata.ownerReferences, 'each object has its own copy')
})

t.test('a template that writes ownerReferences is refused, every such object named', async (t) => {
  const a = deployment()
  a.metadata.ownerReferences = [ref('someone-else')]
  const b = service()
  b.metadata.ownerReferences = []
  const err = t.throws(() => stampOwner([a, b, deployment()], cr)) as unknown
  t.ok(err instanceof RenderError)
  if (err instanceof RenderError) {
    t.equal(err.kind, 'guard')
    t.same(err.problems, [
      'Deployment/cache: metadata.ownerReferences must not be set by a template (the operator sets the controller reference)',
      'Service/cache: metadata.ownerReferences must not be set by a template (the operator sets the controller reference)',
    ])
  }
})

t.test('controllerOf finds the reference with controller true only', async (t) => {
  t.equal(controllerOf({ metadata: {} }), undefined)
  t.equal(controllerOf({ metadata: { ownerReferences: 'nonsense' } }), undefined)
  t.equal(controllerOf({ metadata: { ownerReferences: [ref('x', { controller: false })] } }), undefined)
  t.same(controllerOf({ metadata: { ownerReferences: [ref('x', { controller: false }), ref('y')] } })?.uid, 'y')
})

t.test('control is decided by uid, not by name', async (t) => {
  t.ok(isControlledBy({ metadata: { ownerReferences: [ref('uid-cache')] } }, cr))
  t.notOk(isControlledBy({ metadata: { ownerReferences: [ref('old-uid')] } }, cr), 'same name, older uid: a re-created CR is another owner')
  t.notOk(isControlledBy({ metadata: { ownerReferences: [ref('uid-cache', { controller: false })] } }, cr), 'an owner that is not the controller')
  t.notOk(isControlledBy({ metadata: {} }, { ...cr, metadata: { name: 'cache' } }), 'a CR without uid controls nothing')
})

t.test('object keys identify kind by group (not version), namespace and name', async (t) => {
  t.equal(objectKey(deployment()), 'Deployment.apps/team/cache')
  t.equal(objectKey(service()), 'Service/team/cache')
  t.equal(objectKey({ apiVersion: 'apps/v1beta2', kind: 'Deployment', metadata: { name: 'cache', namespace: 'team' } }), objectKey(deployment()))
  t.equal(objectKey({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } }), 'Namespace//team')
  t.equal(describeObject(deployment()), 'Deployment team/cache')
  t.equal(describeObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } }), 'Namespace team')
})

t.test('ownership conflicts: only existing objects not controlled by this CR, each named with its controller', async (t) => {
  const desired = stampOwner([deployment(), service(), { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'cache', namespace: 'team' } }], cr)
  const cases: { name: string; live: Map<string, LiveObject | undefined>; want: { key: string; controller: string | undefined; message: string }[] }[] = [
    { name: 'nothing exists', live: new Map(), want: [] },
    { name: 'explicitly absent', live: new Map([['Deployment.apps/team/cache', undefined]]), want: [] },
    {
      name: 'all ours',
      live: new Map([
        ['Deployment.apps/team/cache', live(deployment(), [ref('uid-cache')])],
        ['Service/team/cache', live(service(), [ref('other', { controller: false }), ref('uid-cache')])],
      ]),
      want: [],
    },
    {
      name: 'a hand-made Service and a Deployment of another CR',
      live: new Map([
        ['Deployment.apps/team/cache', live(deployment(), [ref('uid-other', { name: 'other' })])],
        ['Service/team/cache', live(service())],
      ]),
      want: [
        { key: 'Deployment.apps/team/cache', controller: 'uid-other', message: 'Deployment team/cache exists and is controlled by Memcached other (uid uid-other), not by this Memcached; it is left alone' },
        { key: 'Service/team/cache', controller: undefined, message: 'Service team/cache exists and has no controller; it was not created by this Memcached and is left alone' },
      ],
    },
    {
      name: 'the objects of a deleted CR of the same name',
      live: new Map([['Deployment.apps/team/cache', live(deployment(), [ref('uid-old')])]]),
      want: [{ key: 'Deployment.apps/team/cache', controller: 'uid-old', message: 'Deployment team/cache exists and is controlled by Memcached cache (uid uid-old), not by this Memcached; it is left alone' }],
    },
    {
      name: 'owned but not controlled (owner without controller: true)',
      live: new Map([['Service/team/cache', live(service(), [ref('uid-cache', { controller: false })])]]),
      want: [{ key: 'Service/team/cache', controller: undefined, message: 'Service team/cache exists and has no controller; it was not created by this Memcached and is left alone' }],
    },
  ]
  // What the render stamps on every object, and what `kubectl delete mc --cascade=orphan` leaves.
  const ours = { 'app.kubernetes.io/managed-by': 'memcached-operator', 'app.kubernetes.io/instance': 'cache' }
  const labelled = (obj: RenderedObject, labels: Record<string, string>): RenderedObject => ({ ...obj, metadata: { ...obj.metadata, labels } })
  const mine = stampOwner([labelled(deployment(), ours), labelled(service(), ours)], cr)
  const orphan = (obj: RenderedObject, extra: Partial<LiveObject['metadata']> = {}): LiveObject => ({ ...live(obj), metadata: { ...live(obj).metadata, ...extra } })
  const adoption: typeof cases = [
    { name: 'its own orphans are adopted', live: new Map([['Deployment.apps/team/cache', orphan(labelled(deployment(), ours))], ['Service/team/cache', orphan(labelled(service(), ours))]]), want: [] },
    {
      name: 'an orphan being deleted is not adopted',
      live: new Map([['Service/team/cache', orphan(labelled(service(), ours), { deletionTimestamp: '2026-11-21T10:00:00Z' })]]),
      want: [{ key: 'Service/team/cache', controller: undefined, message: 'Service team/cache exists and has no controller; it was not created by this Memcached and is left alone' }],
    },
    {
      name: "another instance's orphan is not adopted",
      live: new Map([['Service/team/cache', orphan(labelled(service(), { ...ours, 'app.kubernetes.io/instance': 'other' }))]]),
      want: [{ key: 'Service/team/cache', controller: undefined, message: 'Service team/cache exists and has no controller; it was not created by this Memcached and is left alone' }],
    },
    {
      name: 'an object labelled for this instance by another tool is not adopted',
      live: new Map([['Service/team/cache', orphan(labelled(service(), { ...ours, 'app.kubernetes.io/managed-by': 'Helm' }))]]),
      want: [{ key: 'Service/team/cache', controller: undefined, message: 'Service team/cache exists and has no controller; it was not created by this Memcached and is left alone' }],
    },
    {
      name: 'a labelled object controlled by another CR is still not taken',
      live: new Map([['Service/team/cache', live(labelled(service(), ours), [ref('uid-other', { name: 'other' })])]]),
      want: [{ key: 'Service/team/cache', controller: 'uid-other', message: 'Service team/cache exists and is controlled by Memcached other (uid uid-other), not by this Memcached; it is left alone' }],
    },
  ]
  for (const c of adoption) {
    const got = ownershipConflicts(mine, c.live, cr)
    t.same(got.map((g) => ({ key: g.key, controller: g.controller?.uid, message: g.message })), c.want, c.name)
  }
  for (const c of cases) {
    const got = ownershipConflicts(desired, c.live, cr)
    t.same(got.map((g) => ({ key: g.key, controller: g.controller?.uid, message: g.message })), c.want, c.name)
    for (const g of got) t.same([g.namespace, g.name], ['team', 'cache'], `${c.name}: names the object`)
  }
})
