/**
 * The sandbox server's parts on their own (store, selectors, faults, accounting, errors,
 * discovery helpers) and the request pipeline's less common paths.
 */
import t from 'tap'
import { Store } from '../operator/sandbox/store.ts'
import { parseLabelSelector, parseFieldSelector, fieldsOf, formatLabelSelector, SelectorError } from '../operator/kube/labels.ts'
import { Faults, FaultSpecError, parseFaults } from '../operator/sandbox/faults.ts'
import { Accounting, resourceKey } from '../operator/sandbox/accounting.ts'
import { invalid, failure, forbidden, qualifiedKind } from '../operator/sandbox/errors.ts'
import { compareVersions } from '../operator/sandbox/discovery.ts'
import { deepEqual } from '../operator/kube/json.ts'
import { mergePatch } from '../operator/sandbox/pipeline/objects.ts'
import { managerOf, patchTypeOf } from '../operator/sandbox/pipeline/reply.ts'
import { kubeconfigFor } from '../operator/sandbox/kubeconfig.ts'
import { createCluster } from '../operator/sandbox/index.ts'
import { call, collect, configMap, deployment, request, tick, until, widget, widgetCRDs } from './support/sandbox-requests.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'

const CM = '/api/v1/namespaces/default/configmaps'
const D = '/apis/apps/v1/namespaces/default/deployments'
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'

function cm(name: string, namespace = 'default'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } }
}

t.test('store: global resourceVersions, key order, history window and subscribers', async (t) => {
  const s = new Store(3, 100)
  t.equal(s.resourceVersion, 100)
  s.put('/configmaps', cm('b'))
  s.put('/configmaps', cm('a', 'other'))
  s.put('/configmaps', cm('a'))
  t.same(s.list('/configmaps').map((o) => `${o.namespace}/${o.name}`), ['default/a', 'default/b', 'other/a'])
  t.same(s.list('/configmaps', 'other').map((o) => o.name), ['a'])
  t.same(s.list('/nothing'), [])
  t.equal(s.size, 3)
  t.same(s.tables(), ['/configmaps'])
  const seen: string[] = []
  const unsub = s.subscribe('/configmaps', (e) => seen.push(`${e.type}:${e.current.name}:${e.rv}`))
  s.put('/configmaps', cm('b'))
  t.same(s.list('/configmaps').map((o) => o.rv), [103, 104, 102], 'the sorted view follows updates')
  s.remove('/configmaps', 'default', 'a')
  t.equal(s.remove('/configmaps', 'default', 'zzz'), undefined)
  unsub()
  s.put('/configmaps', cm('c'))
  t.same(seen, ['MODIFIED:b:104', 'DELETED:a:105'])
  t.equal(s.compactedResourceVersion, 103, 'three events kept: 104, 105, 106')
  t.equal(s.since('/configmaps', 102), undefined)
  t.same(s.since('/configmaps', 104)?.map((e) => e.rv), [105, 106])
  t.same(s.since('/secrets', 103), [])
  s.compact()
  t.equal(s.since('/configmaps', 105), undefined)
  t.same(s.since('/configmaps', 106), [])
})

t.test('store: a long history is trimmed without losing order', async (t) => {
  const s = new Store(10, 0)
  for (let i = 0; i < 10_000; i++) s.put('/configmaps', cm(`x${i % 7}`))
  t.same(s.since('/configmaps', 9_995)?.map((e) => e.rv), [9996, 9997, 9998, 9999, 10000])
  t.equal(s.since('/configmaps', 9_989), undefined)
})

t.test('label selectors, field selectors and LabelSelector formatting', async (t) => {
  t.ok(parseLabelSelector('').matches({}))
  t.ok(parseLabelSelector(undefined).empty)
  t.ok(parseLabelSelector('a=1, b in (x, y)').matches({ a: '1', b: 'y' }))
  t.notOk(parseLabelSelector('a=1').matches(undefined))
  t.ok(parseLabelSelector('a!=1').matches(undefined))
  t.throws(() => parseLabelSelector('a b'), SelectorError)
  const f = parseFieldSelector('metadata.name=x,spec.nodeName=')
  t.same(f.fields, ['metadata.name', 'spec.nodeName'])
  t.ok(f.matches(fieldsOf({ metadata: { name: 'x' }, spec: {} }, f.fields)))
  t.notOk(f.matches(fieldsOf({ metadata: { name: 'x' }, spec: { nodeName: 'n' } }, f.fields)))
  t.ok(parseFieldSelector('').empty)
  t.throws(() => parseFieldSelector('a in (b)'), SelectorError)
  t.equal(
    formatLabelSelector({ matchLabels: { b: '2', a: '1' }, matchExpressions: [{ key: 'c', operator: 'In', values: ['y', 'x'] }, { key: 'd', operator: 'NotIn', values: ['z'] }, { key: 'e', operator: 'Exists' }, { key: 'f', operator: 'DoesNotExist' }] }),
    'a=1,b=2,c in (x,y),d notin (z),e,!f',
  )
  // LabelSelectorAsSelector sorts every requirement by key, expressions among them.
  t.equal(formatLabelSelector({ matchLabels: { z: '1' }, matchExpressions: [{ key: 'a', operator: 'Exists' }, { key: 'm', operator: 'In', values: ['b', 'a'] }] }), 'a,m in (a,b),z=1')
  t.equal(formatLabelSelector(null), '')
})

t.test('fault settings parse from strings and JSON, and refuse nonsense', async (t) => {
  t.same(parseFaults('error-rate=0.05,conflict-rate=0.02,throttle-rate=0.01,latency-ms=20,watch-drop-s=5,expire-on-resume=true,verbs=patch|update,resources=deployments,paused=false'), {
    errorRate: 0.05,
    conflictRate: 0.02,
    throttleRate: 0.01,
    latencyMs: 20,
    watchDropS: 5,
    expireOnResume: true,
    verbs: ['patch', 'update'],
    resources: ['deployments'],
    paused: false,
  })
  t.same(parseFaults({ errorRate: 0.5, namespaces: ['a'] }), { errorRate: 0.5, namespaces: ['a'] })
  t.same(parseFaults('timeout-rate=0.01'), { timeoutRate: 0.01 })
  t.same(parseFaults(undefined), {})
  for (const bad of ['error-rate', 'error-rate=2', 'timeout-rate=1.5', 'latency-ms=-1', 'paused=maybe', 'what=1', 'error-rate=']) t.throws(() => parseFaults(bad), FaultSpecError, bad)
  t.throws(() => parseFaults({ verbs: 3 }), FaultSpecError)
  const f = new Faults('resources=deployments.apps/status,namespaces=prod')
  t.ok(f.matches({ verb: 'patch', group: 'apps', resource: 'deployments', subresource: 'status', namespace: 'prod' }))
  t.notOk(f.matches({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'prod' }))
  t.notOk(f.matches({ verb: 'patch', group: 'apps', resource: 'deployments', subresource: 'status', namespace: 'dev' }))
  t.equal(f.errorFor({ verb: 'get', group: '', resource: 'pods' }), undefined, 'no rates, no errors')
  f.close()
})

t.test('faults are reproducible for a seed', async (t) => {
  const run = (): number[] => {
    const f = new Faults('error-rate=0.3,throttle-rate=0.3,seed=42')
    const out: number[] = []
    for (let i = 0; i < 30; i++) out.push(f.errorFor({ verb: 'get', group: '', resource: 'pods' })?.code ?? 200)
    return out
  }
  const a = run()
  t.same(run(), a)
  t.ok(a.includes(200) && a.includes(429))
})

t.test('accounting keeps the last N requests', async (t) => {
  const a = new Accounting(2)
  for (let i = 0; i < 7; i++) a.record({ time: '', verb: 'get', group: '', resource: 'pods', name: `p${i}`, code: 200 })
  t.same(a.log().map((r) => r.name), ['p5', 'p6'])
  t.same(a.log(1).map((r) => r.name), ['p6'])
  t.equal(a.counts().byResource['pods'], 7)
  t.same(new Accounting(0).log(), [])
  t.equal(resourceKey('apps', 'deployments', 'scale'), 'deployments.apps/scale')
})

t.test('error bodies and small helpers', async (t) => {
  const e = invalid('apps', 'Deployment', 'x', [
    { reason: 'FieldValueRequired', field: 'spec.a', message: 'Required value' },
    { reason: 'FieldValueInvalid', field: 'spec.b', message: 'Invalid value: 1: bad' },
  ])
  t.equal(e.status.message, 'Deployment.apps "x" is invalid: [spec.a: Required value, spec.b: Invalid value: 1: bad]')
  t.same(failure(500, 'InternalError', 'boom'), { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'boom', reason: 'InternalError', code: 500 })
  t.equal(forbidden('', 'namespaces', 'default', 'no').status.message, 'namespaces "default" is forbidden: no')
  t.equal(qualifiedKind('', 'Pod'), 'Pod')
  t.same(['v1beta1', 'v2', 'v1', 'v1alpha1', 'v10', 'foo', 'v2beta2'].sort(compareVersions), ['v10', 'v2', 'v1', 'v2beta2', 'v1beta1', 'v1alpha1', 'foo'])
  t.equal(compareVersions('abc', 'abd'), -1)
  t.ok(deepEqual({ a: [1, { b: 2 }], c: undefined }, { a: [1, { b: 2 }] }))
  t.notOk(deepEqual([1], { 0: 1 }))
  t.notOk(deepEqual({ a: 1 }, { a: 1, b: 2 }))
  t.same(mergePatch({ a: { b: 1, c: 2 }, d: 1 }, { a: { b: null }, e: [1] }), { a: { c: 2 }, d: 1, e: [1] })
  t.same(mergePatch('x', { a: 1 }), { a: 1 })
  t.equal(managerOf(request('GET /api/v1/pods', undefined, { userAgent: '' })), 'unknown')
  t.equal(patchTypeOf('application/json'), undefined)
  t.match(kubeconfigFor('http://127.0.0.1:1'), /namespace: default/)
})

t.test('request pipeline edge cases', async (t) => {
  const c = createCluster()
  t.test('names: required, validated per kind', async (t) => {
    t.match(call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }).body.message, 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required')
    t.match(call(c, `POST ${CM}`, configMap('Bad_Name')).body.message, /metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/)
    t.match(call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a_b' } }).body.message, /RFC 1123 label/)
    t.match(call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a.b' } }).body.message, /Invalid value: "a.b": must not contain dots$/)
    t.match(call(c, '/api/v1/namespaces/default/services'.replace(/^/, 'POST '), { apiVersion: 'v1', kind: 'Service', metadata: { name: '1svc' }, spec: {} }).body.message, /DNS-1035 label/)
    t.equal(call(c, `POST ${CM}`, configMap('x'.repeat(254))).status, 422)
    t.equal(call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x'.repeat(64) } }).status, 422)
    t.equal(call(c, `PATCH ${CM}/Bad?fieldManager=m`, configMap('Bad'), { type: 'apply' }).status, 422)
  })
  t.test('body and URL must agree', async (t) => {
    call(c, `POST ${CM}`, configMap('agree'))
    t.equal(call(c, `PUT ${CM}/agree`, configMap('other')).body.message, 'the name of the object (other) does not match the name on the URL (agree)')
    t.equal(call(c, `POST ${CM}`, { ...configMap('ns'), metadata: { name: 'ns', namespace: 'kube-system' } }).status, 400)
    t.equal(call(c, `POST ${CM}`, { ...configMap('k'), kind: 'Secret' }).status, 400)
    t.equal(call(c, `POST ${CM}`, { ...configMap('k'), apiVersion: 'v2' }).status, 400)
    t.equal(call(c, `POST ${CM}`, 'not an object').status, 400)
    t.equal(call(c, `POST ${CM}/named`, configMap('named')).status, 405)
    t.equal(call(c, 'POST /api/v1/configmaps', configMap('nons')).status, 405)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=m`, { ...configMap('zzz') }, { type: 'apply' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=m`, { ...configMap('agree'), kind: 'Secret' }, { type: 'apply' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=m`, { ...configMap('agree'), metadata: { name: 'agree', namespace: 'x' } }, { type: 'apply' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=m`, 'a: [', { type: 'apply' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=m`, '- 1', { type: 'apply' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree?fieldManager=${'m'.repeat(129)}`, configMap('agree'), { type: 'apply' }).status, 422)
    t.equal(call(c, `PATCH ${CM}/agree`, { a: 1 }, { type: 'json' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree`, [1], { type: 'merge' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree`, '{', { type: 'merge' }).status, 400)
    t.equal(call(c, `PATCH ${CM}/agree`, {}, { type: 'text/plain' }).status, 415)
    // An unknown directive is not one of the errors apiserver turns into a 400: it answers it raw (500, no reason).
    const bogus = call(c, `PATCH ${CM}/agree`, { $patch: 'bogus' }, { type: 'strategic' })
    t.equal(bogus.status, 500)
    t.equal(bogus.body.message, 'unknown patch type: bogus in map: map[$patch:bogus]')
    t.equal(call(c, `PATCH ${CM}/agree`, { metadata: { $retainKeys: 'x' } }, { type: 'strategic' }).status, 400)
    t.equal(call(c, 'GET /api/v1/namespaces/default/configmaps/agree/status').status, 404)
    t.equal(call(c, 'GET /api/v1/namespaces/default/configmaps/agree/eviction').status, 404)
    t.equal(call(c, 'GET /api/v1/namespaces/default/namespaces').status, 404)
    t.equal(call(c, 'DELETE /api/v1/namespaces/default/pods/p/status').status, 405)
    t.equal(call(c, `GET ${CM}?continue=%%%`).status, 400)
    t.equal(call(c, 'GET /api/v1/namespaces/default/configmaps/agree/scale').status, 404)
  })
  t.test('apply to a missing namespace or a missing object via /status', async (t) => {
    t.equal(call(c, `PATCH /api/v1/namespaces/nope/configmaps/a?fieldManager=m`, configMap('a'), { type: 'apply' }).body.message, 'namespaces "nope" not found')
    t.equal(call(c, `PATCH ${D}/ghost/status?fieldManager=m`, deployment('ghost'), { type: 'apply' }).status, 404)
  })
  t.test('apply to /status writes status only', async (t) => {
    call(c, `POST ${D}`, deployment('st'))
    const r = call(c, `PATCH ${D}/st/status?fieldManager=ctrl`, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'st', labels: { no: 'pe' } }, spec: { replicas: 9 }, status: { replicas: 2 } }, { type: 'apply' })
    t.equal(r.status, 200)
    t.same(r.body.status, { replicas: 2 })
    t.equal(r.body.spec.replicas, 1)
    t.match(r.body.metadata.managedFields, [{ manager: 'ctrl', operation: 'Apply', subresource: 'status' }])
  })
  t.test('apply keeps identity and status of the live object; a deleting object takes no new finalizers', async (t) => {
    const d = deployment('ap')
    d.metadata.finalizers = ['x/y']
    const created = call(c, `PATCH ${D}/ap?fieldManager=m`, d, { type: 'apply' })
    call(c, `PATCH ${D}/ap/status`, { status: { replicas: 1 } })
    const again = call(c, `PATCH ${D}/ap?fieldManager=m`, { ...d, spec: { ...(d.spec as object), replicas: 2 }, status: { replicas: 7 } }, { type: 'apply' })
    t.equal(again.body.metadata.uid, created.body.metadata.uid)
    t.same(again.body.status, { replicas: 1 })
    call(c, `DELETE ${D}/ap`)
    const more = call(c, `PATCH ${D}/ap?fieldManager=m`, { ...d, metadata: { ...d.metadata, finalizers: ['x/y', 'z/w'] } }, { type: 'apply' })
    t.equal(more.status, 422)
    const release = call(c, `PATCH ${D}/ap?fieldManager=m`, { ...d, metadata: { name: 'ap' } }, { type: 'apply' })
    t.equal(release.status, 200)
    t.equal(call(c, `GET ${D}/ap`).status, 404, 'the last finalizer went away with the apply')
  })
  t.test('Secret stringData becomes data; pods start Pending with a QoS class', async (t) => {
    const s = call(c, 'POST /api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { pw: 'hunter2' } })
    t.same(s.body.data, { pw: Buffer.from('hunter2').toString('base64') })
    t.equal(s.body.stringData, undefined)
    const pod = (name: string, resources: object) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'a', image: 'b', resources }] } })
    t.same(call(c, 'POST /api/v1/namespaces/default/pods', pod('be', {})).body.status, { phase: 'Pending', qosClass: 'BestEffort' })
    t.equal(call(c, 'POST /api/v1/namespaces/default/pods', pod('bu', { requests: { cpu: '1' } })).body.status.qosClass, 'Burstable')
    t.equal(call(c, 'POST /api/v1/namespaces/default/pods', pod('gu', { limits: { cpu: '1', memory: '1Gi' } })).body.status.qosClass, 'Guaranteed')
  })
  t.test('delete: preconditions, bad policy, repeated deletes, deletecollection', async (t) => {
    call(c, `POST ${CM}`, configMap('pre'))
    t.match(call(c, `DELETE ${CM}/pre`, { preconditions: { uid: 'nope' } }).body.message, 'Precondition failed: UID in precondition: nope')
    t.match(call(c, `DELETE ${CM}/pre`, { preconditions: { resourceVersion: '1' } }).body.message, 'Precondition failed: ResourceVersion in precondition: 1')
    t.equal(call(c, `DELETE ${CM}/pre?propagationPolicy=Sometimes`).status, 422)
    const held = { ...configMap('held'), metadata: { name: 'held', finalizers: ['a/b'] } }
    call(c, `POST ${CM}`, held)
    const first = call(c, `DELETE ${CM}/held`)
    const second = call(c, `DELETE ${CM}/held`)
    t.equal(second.body.metadata.resourceVersion, first.body.metadata.resourceVersion, 'a repeated delete changes nothing')
    t.same(call(c, `DELETE ${CM}/held?propagationPolicy=Orphan&dryRun=All`).body.metadata.finalizers, ['a/b', 'orphan'])
    const orphaned = call(c, `DELETE ${CM}/held`, { orphanDependents: true })
    t.same(orphaned.body.metadata.finalizers, ['a/b', 'orphan'])
    call(c, `PATCH ${CM}/held`, { metadata: { finalizers: ['orphan'] } })
    t.equal(call(c, `DELETE ${CM}/held?propagationPolicy=Background&dryRun=All`).body.status, 'Success')
    t.equal(call(c, `DELETE ${CM}/held?propagationPolicy=Background`).body.status, 'Success')
    t.equal(call(c, `GET ${CM}/held`).status, 404)
    for (const n of ['dc1', 'dc2', 'dc3']) call(c, `POST ${CM}`, configMap(n, {}, { batch: n === 'dc3' ? 'no' : 'yes' }))
    const dc = call(c, `DELETE ${CM}?labelSelector=batch%3Dyes`)
    t.equal(dc.body.kind, 'ConfigMapList')
    t.same(dc.body.items.map((i: KubeObject) => i.metadata.name), ['dc1', 'dc2'])
    t.equal(call(c, `GET ${CM}/dc3`).status, 200)
  })
  t.test('namespaces: deleting one removes its contents; default and kube-system are protected', async (t) => {
    call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'temp' } })
    call(c, 'POST /api/v1/namespaces/temp/configmaps', configMap('inside'))
    call(c, 'POST /apis/apps/v1/namespaces/temp/deployments', deployment('inside'))
    t.equal(call(c, 'GET /api/v1/configmaps').body.items.filter((i: KubeObject) => i.metadata.namespace === 'temp').length, 1, 'cluster-wide list spans namespaces')
    t.equal(call(c, 'DELETE /api/v1/namespaces/temp').status, 200)
    t.equal(call(c, 'GET /api/v1/namespaces/temp/configmaps/inside').status, 404)
    t.equal(call(c, 'GET /apis/apps/v1/namespaces/temp/deployments/inside').status, 404)
    const r = call(c, 'DELETE /api/v1/namespaces/kube-system')
    t.equal(r.status, 403)
    t.equal(r.body.message, 'namespaces "kube-system" is forbidden: this namespace may not be deleted')
  })
  t.test('scale: validation and dry run', async (t) => {
    call(c, `POST ${D}`, deployment('sc'))
    t.equal(call(c, `PUT ${D}/sc/scale`, { spec: { replicas: 'many' } }).status, 422)
    t.equal(call(c, `PUT ${D}/sc/scale`, 'nope').status, 400)
    t.equal(call(c, `PATCH ${D}/sc/scale?dryRun=All`, { spec: { replicas: 7 } }).body.spec.replicas, 7)
    t.equal(call(c, `GET ${D}/sc`).body.spec.replicas, 1)
    t.equal(call(c, `PATCH ${D}/sc/scale`, [{ op: 'replace', path: '/spec/replicas', value: 2 }], { type: 'json' }).body.spec.replicas, 2)
    t.equal(call(c, `PATCH ${D}/sc/scale`, [{ op: 'remove', path: '/spec/nope' }], { type: 'json' }).status, 422)
    t.equal(call(c, `PATCH ${D}/sc/scale`, { a: 1 }, { type: 'json' }).status, 400)
    t.equal(call(c, `PATCH ${D}/sc/scale?fieldManager=m`, {}, { type: 'apply' }).status, 415)
    t.equal(call(c, `PATCH ${D}/sc/scale`, { spec: { replicas: 3 } }, { type: 'strategic' }).body.spec.replicas, 3)
  })
})

t.test('CRDs: name conflicts keep a second CRD from being served; updates re-register', async (t) => {
  const c = createCluster()
  const [widgets] = widgetCRDs()
  if (!widgets) throw new Error('fixture')
  t.equal(call(c, `POST ${CRDS}`, widgets).status, 201)
  const clash = structuredClone(widgets)
  clash.metadata.name = 'things.test.example.com'
  ;(clash.spec as { names: { plural: string; singular: string } }).names.plural = 'things'
  ;(clash.spec as { names: { plural: string; singular: string } }).names.singular = 'thing'
  const r = call(c, `POST ${CRDS}`, clash)
  t.equal(r.status, 201)
  const got = call(c, `GET ${CRDS}/things.test.example.com`)
  t.match(got.body.status.conditions, [{ type: 'NamesAccepted', status: 'False', reason: 'KindConflict' }, { type: 'Established', status: 'False' }])
  t.equal(call(c, 'GET /apis/test.example.com/v1/namespaces/default/things').status, 404)
  t.equal(call(c, `POST ${CRDS}`, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'bad' }, spec: {} }).status, 422)
  call(c, 'POST /apis/test.example.com/v1/namespaces/default/widgets', widget('w'))
  const updated = structuredClone(got.body.metadata.name ? call(c, `GET ${CRDS}/widgets.test.example.com`).body : widgets)
  updated.spec.versions[0].additionalPrinterColumns = [{ name: 'Color', type: 'string', jsonPath: '.spec.color' }]
  const u = call(c, `PUT ${CRDS}/widgets.test.example.com`, updated)
  t.equal(u.status, 200)
  t.equal(u.body.metadata.generation, 2)
  t.same(c.registry.lookup('test.example.com', 'v1', 'widgets')?.printerColumns?.map((p) => p.name), ['Color'])
  t.equal(call(c, 'GET /apis/test.example.com/v1/namespaces/default/widgets/w').status, 200, 'objects survive a CRD update')
})

t.test('in-process watches: errors, timeouts, bookmarks, initial events', async (t) => {
  const c = createCluster({ bookmarkIntervalMs: 10 })
  const bad = collect(c, 'GET /api/v1/namespaces/default/nothings?watch=true')
  t.match(bad.events, [{ type: 'ERROR', object: { code: 404 } }])
  t.ok(bad.closed())
  bad.stop()
  call(c, `POST ${CM}`, configMap('a'))
  const timed = collect(c, `GET ${CM}?watch=true&timeoutSeconds=0.02&resourceVersion=${c.store.resourceVersion}`)
  await until('the watch to time out', () => timed.closed())
  t.ok(timed.closed(), 'timeoutSeconds ends the watch')
  const initial = collect(c, `GET ${CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`)
  t.same(initial.events.map((e) => e.type), ['ADDED', 'BOOKMARK'])
  t.match(initial.events[1]?.object, { metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } })
  // A ConfigMap the watch's namespace filters out still moves the ConfigMaps' resourceVersion.
  call(c, 'POST /api/v1/namespaces/kube-system/configmaps', configMap('elsewhere'))
  await until('a periodic bookmark', () => initial.events.length > 2)
  t.equal(initial.events[2]?.type, 'BOOKMARK', 'periodic bookmarks follow once the type has moved')
  initial.stop()
  const n = initial.events.length
  await tick(30)
  t.equal(initial.events.length, n, 'a stopped watch gets nothing more')
  const resp = await c.handle({ ...request(`GET ${CM}`), verb: 'watch' })
  t.equal(resp.status, 400, 'watch is not a handle() verb')
})

t.test('the watch history window bounds resumption', async (t) => {
  const c = createCluster({ historyWindow: 5 })
  const start = c.store.resourceVersion
  for (let i = 0; i < 10; i++) call(c, `POST ${CM}`, configMap(`w${i}`))
  const w = collect(c, `GET ${CM}?watch=true&resourceVersion=${start}`)
  t.equal(w.events[0]?.type, 'ERROR')
  const ok = collect(c, `GET ${CM}?watch=true&resourceVersion=${c.store.resourceVersion - 3}`)
  t.equal(ok.events.length, 3)
  ok.stop()
})

t.test('built-in validation refuses what a real server refuses, with its messages', async (t) => {
  const c = createCluster()
  const d = (mutate: (o: { metadata: KubeObject['metadata']; spec: any }) => void): KubeObject => {
    const o = deployment('v') as unknown as { metadata: KubeObject['metadata']; spec: any }
    mutate(o)
    return o as unknown as KubeObject
  }
  const msg = (o: KubeObject): string => call(c, `POST ${D}`, o).body.message
  t.equal(msg(d((o) => (o.spec.template.metadata.labels = { app: 'other' }))), 'Deployment.apps "v" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`')
  t.equal(msg(d((o) => delete o.spec.selector)), 'Deployment.apps "v" is invalid: spec.selector: Required value')
  t.match(msg(d((o) => (o.spec.selector = {}))), 'spec.selector: Invalid value: {}: empty selector is invalid for deployment')
  t.equal(msg(d((o) => (o.spec.template.spec.containers = [{ name: 'a' }]))), 'Deployment.apps "v" is invalid: spec.template.spec.containers[0].image: Required value')
  t.match(msg(d((o) => (o.spec.template.spec.containers = [{ name: 'a', image: 'x' }, { name: 'a', image: 'y' }]))), 'spec.template.spec.containers[1].name: Duplicate value: "a"')
  t.match(msg(d((o) => (o.spec.template.spec.containers = []))), 'spec.template.spec.containers: Required value')
  t.match(msg(d((o) => (o.spec.template.spec.containers = [{ name: '', image: 'x', ports: [{ containerPort: 0 }] }]))), '[spec.template.spec.containers[0].name: Required value, spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive]')
  t.match(msg(d((o) => (o.spec.replicas = -1))), 'spec.replicas: Invalid value: -1: must be greater than or equal to 0')
  t.match(msg(d((o) => (o.spec.selector = { matchExpressions: [{ key: 'app', operator: 'In', values: ['nope'] }] }))), '`selector` does not match template `labels`')
  t.equal(call(c, `POST ${D}`, d((o) => (o.spec.selector = { matchExpressions: [{ key: 'app', operator: 'Exists' }, { key: 'x', operator: 'DoesNotExist' }, { key: 'app', operator: 'NotIn', values: ['z'] }] }))).status, 201)
  call(c, `DELETE ${D}/v`)
  t.match(msg(d((o) => (o.metadata.labels = { 'bad key': 'x' }))), `metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters`)
  t.match(msg(d((o) => (o.metadata.labels = { a: 'x'.repeat(64) }))), 'must be no more than 63 characters')
  t.match(msg(d((o) => (o.metadata.labels = { a: '-x' }))), 'a valid label must be an empty string')
  t.match(msg(d((o) => (o.metadata.labels = { 'Bad_Prefix/a': 'x' }))), 'prefix part a lowercase RFC 1123 subdomain')
  t.match(msg(d((o) => (o.metadata.labels = { 'a/b/c': 'x' }))), 'a qualified name must consist of')
  t.match(msg(d((o) => (o.metadata.labels = { '/a': 'x' }))), 'prefix part must be non-empty')
  t.match(msg(d((o) => (o.metadata.labels = { 'a/': 'x' }))), 'name part must be non-empty')
  t.match(msg(d((o) => (o.metadata.labels = { ['x'.repeat(64)]: 'x' }))), 'name part must be no more than 63 characters')
  t.match(msg(d((o) => (o.metadata.labels = { [`${'a'.repeat(254)}/b`]: 'x' }))), 'prefix part must be no more than 253 characters')
  t.match(msg(d((o) => (o.metadata.annotations = { 'bad key': 'x' }))), 'metadata.annotations: Invalid value: "bad key"')
  t.match(msg(d((o) => (o.metadata.annotations = { big: 'x'.repeat(262_145) }))), 'metadata.annotations: Too long: may not be more than 262144 bytes')

  t.equal(call(c, `POST ${D}`, deployment('imm')).status, 201)
  const changed = call(c, `PATCH ${D}/imm`, { spec: { selector: { matchLabels: { app: 'imm', more: 'x' } }, template: { metadata: { labels: { more: 'x' } } } } })
  t.equal(changed.body.message, 'Deployment.apps "imm" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"imm","more":"x"}}: field is immutable')

  const svc = (spec: object) => call(c, 'POST /api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec })
  t.equal(svc({}).body.message, 'Service "s" is invalid: spec.ports: Required value')
  t.match(svc({ ports: [{ port: 70000 }] }).body.message, 'spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive')
  t.match(svc({ ports: [{ port: 1 }, { port: 2 }] }).body.message, 'spec.ports[0].name: Required value')
  t.match(svc({ ports: [{ port: 1, name: 'a' }, { port: 2, name: 'a' }] }).body.message, 'spec.ports[1].name: Duplicate value: "a"')
  t.equal(svc({ clusterIP: 'None' }).status, 201)
  t.match(call(c, 'POST /api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} }).body.message, 'spec.containers: Required value')
  t.match(call(c, 'POST /api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } }).body.message, 'spec.containers: Required value')
  const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'p' }, spec: { minAvailable: 1, maxUnavailable: 1 } }
  t.match(call(c, 'POST /apis/policy/v1/namespaces/default/poddisruptionbudgets', pdb).body.message, 'minAvailable and maxUnavailable cannot be both set')
  const rs = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'r' }, spec: { selector: {}, template: { spec: { containers: [{ name: 'a', image: 'b' }] } } } }
  t.match(call(c, 'POST /apis/apps/v1/namespaces/default/replicasets', rs).body.message, 'empty selector is invalid for deployment')
  for (const crd of widgetCRDs()) call(c, `POST ${CRDS}`, crd)
  const bad = { ...widget('w'), metadata: { name: 'w', labels: { 'no way': 'x' } } }
  t.match(call(c, 'POST /apis/test.example.com/v1/namespaces/default/widgets', bad).body.message, 'Widget.test.example.com "w" is invalid: metadata.labels: Invalid value: "no way"')
})

t.test('store: a subscriber that writes while notified does not reorder events for the others', async (t) => {
  const s = new Store(100, 0)
  const seen: number[] = []
  s.subscribe('/configmaps', (e) => {
    if (e.current.name === 'first') s.put('/configmaps', cm('second'))
  })
  s.subscribe('/configmaps', (e) => seen.push(e.rv))
  s.put('/configmaps', cm('first'))
  t.same(seen, [1, 2])
})

t.test('a watcher that writes while receiving its initial events still sees its write', async (t) => {
  const c = createCluster()
  call(c, `POST ${CM}`, configMap('seed'))
  const seen: string[] = []
  const stop = c.watch({ ...request(`GET ${CM}?watch=true`), verb: 'watch' }, (e) => {
    const name = (e.object as KubeObject).metadata.name ?? ''
    seen.push(`${e.type} ${name}`)
    if (name === 'seed') call(c, `POST ${CM}`, configMap('echo'))
  })
  t.same(seen, ['ADDED seed', 'ADDED echo'])
  stop()
})

t.test('events are validated like the real server validates them', async (t) => {
  const c = createCluster()
  const E = '/apis/events.k8s.io/v1/namespaces/default/events'
  const good = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: 'e1' },
    eventTime: '2026-11-21T10:00:00.000000Z',
    type: 'Normal',
    reason: 'Scaled',
    action: 'Reconcile',
    note: 'ok',
    reportingController: 'example.com/memcached-operator',
    reportingInstance: 'memcached-operator-0',
    regarding: { kind: 'Memcached', namespace: 'default', name: 'm' },
  }
  t.equal(call(c, `POST ${E}`, good).status, 201)
  const bad = call(c, `POST ${E}`, { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e2' }, type: 'Odd', deprecatedCount: 2, deprecatedSource: { component: 'x' }, deprecatedFirstTimestamp: 'x', deprecatedLastTimestamp: 'y', note: 'n'.repeat(1025), regarding: { namespace: 'other' } })
  t.equal(bad.status, 422)
  t.same(
    bad.body.details.causes.map((c: { field: string }) => c.field),
    ['involvedObject.namespace', 'eventTime', 'type', 'firstTimestamp', 'lastTimestamp', 'count', 'source', 'reportingController', 'reportingInstance', 'action', 'reason', 'message'],
  )
  t.match(bad.body.message, 'type: Invalid value: "": has invalid value: Odd')
  const long = call(c, `POST ${E}`, { ...good, metadata: { name: 'e3' }, reason: 'r'.repeat(129), reportingController: 'bad controller' })
  t.match(long.body.message, 'reason: Invalid value: "": can have at most 128 characters')
  t.match(long.body.message, 'reportingController: Invalid value: "bad controller"')
  const core = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'c1' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'kube-system' }, reason: 'X', message: 'y' }
  t.match(call(c, `POST /api/v1/namespaces/default/events`, core).body.message, 'Event "c1" is invalid: involvedObject.namespace: Invalid value: "kube-system": does not match event.namespace')
  t.equal(call(c, `POST /api/v1/namespaces/default/events`, { ...core, involvedObject: { kind: 'Node', name: 'n' } }).status, 201)
})

t.test('handle() copies the request body: the caller may mutate it afterwards', async (t) => {
  const c = createCluster()
  const body = configMap('mine', { a: '1' }, { tier: 'x' })
  const r = await c.handle({ ...request(`POST ${CM}`), body })
  t.equal(r.status, 201)
  ;(body.metadata.labels as Record<string, string>).tier = 'changed'
  t.equal(call(c, `GET ${CM}?labelSelector=tier%3Dx`).body.items.length, 1)
})

t.test('simulated graceful pod termination (podTerminationMs)', async (t) => {
  const c = createCluster({ podTerminationMs: 30 })
  const P = '/api/v1/namespaces/default/pods'
  const pod = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 5, containers: [{ name: 'a', image: 'b' }] }, ...extra })
  call(c, `POST ${P}`, pod('slow'))
  const w = collect(c, `GET ${P}?watch=true&resourceVersion=${c.store.resourceVersion}`)
  const d = call(c, `DELETE ${P}/slow`)
  t.equal(d.status, 200)
  t.equal(d.body.metadata.deletionGracePeriodSeconds, 5)
  t.ok(Date.parse(d.body.metadata.deletionTimestamp) - Date.parse(d.body.metadata.creationTimestamp) >= 4000, 'deletionTimestamp is now + grace')
  t.equal(call(c, `DELETE ${P}/slow`).body.metadata.resourceVersion, d.body.metadata.resourceVersion, 'a repeated delete changes nothing')
  t.equal(call(c, `PATCH ${P}/slow/status`, { status: { phase: 'Running' } }).status, 200, 'a terminating pod still takes status updates')
  t.equal(call(c, `GET ${P}/slow`).status, 200)
  await until('the pod to go', () => call(c, `GET ${P}/slow`).status === 404)
  t.equal(call(c, `GET ${P}/slow`).status, 404)
  t.same(w.events.map((e) => e.type), ['MODIFIED', 'MODIFIED', 'DELETED'])
  w.stop()

  call(c, `POST ${P}`, pod('forced'))
  t.equal(call(c, `DELETE ${P}/forced?gracePeriodSeconds=0`).body.kind, 'Pod')
  t.equal(call(c, `GET ${P}/forced`).status, 404, 'grace 0 deletes at once')
  call(c, `POST ${P}`, { ...pod('pending'), spec: { containers: [{ name: 'a', image: 'b' }] } })
  call(c, `DELETE ${P}/pending`)
  t.equal(call(c, `GET ${P}/pending`).status, 404, 'an unscheduled pod goes at once')
  call(c, `POST ${P}`, pod('dry'))
  t.ok(call(c, `DELETE ${P}/dry?dryRun=All`, { gracePeriodSeconds: 7 }).body.metadata.deletionTimestamp)
  t.equal(call(c, `GET ${P}/dry`).body.metadata.deletionTimestamp, undefined)
  call(c, `DELETE ${P}/dry`)
  t.equal(call(c, `DELETE ${P}/dry`, { gracePeriodSeconds: 0 }).status, 200)
  t.equal(call(c, `GET ${P}/dry`).status, 404, 'a force delete ends a graceful one')

  call(c, `POST ${P}`, { ...pod('held'), metadata: { name: 'held', finalizers: ['example.com/hold'] } })
  call(c, `DELETE ${P}/held`)
  await until('the kubelet to finish', () => call(c, `GET ${P}/held`).body.metadata.deletionGracePeriodSeconds === 0)
  const held = call(c, `GET ${P}/held`)
  t.equal(held.body.metadata.deletionGracePeriodSeconds, 0, 'the kubelet is done; the finalizer holds it')
  call(c, `PATCH ${P}/held`, { metadata: { finalizers: null } })
  t.equal(call(c, `GET ${P}/held`).status, 404)
  call(c, `POST ${P}`, pod('replaced'))
  call(c, `DELETE ${P}/replaced`)
  call(c, `DELETE ${P}/replaced?gracePeriodSeconds=0`)
  call(c, `POST ${P}`, pod('replaced'))
  // A pod deleted after the first one has its timer fire after it.
  call(c, `POST ${P}`, pod('marker'))
  call(c, `DELETE ${P}/marker`)
  await until('the later pod to go', () => call(c, `GET ${P}/marker`).status === 404)
  t.equal(call(c, `GET ${P}/replaced`).status, 200, 'the timer of an earlier pod does not touch a new one')
})

t.test('pod logs: empty for a running container, refused while waiting or ambiguous', async (t) => {
  const c = createCluster()
  const P = '/api/v1/namespaces/default/pods'
  call(c, `POST ${P}`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'one' }, spec: { containers: [{ name: 'a', image: 'b' }] } })
  t.equal(call(c, `GET ${P}/one/log`).body.message, 'container "a" in pod "one" is waiting to start: ContainerCreating')
  call(c, `PATCH ${P}/one/status`, { status: { containerStatuses: [{ name: 'a', state: { running: { startedAt: '2026-11-21T10:00:00Z' } } }] } })
  const ok = await c.handle(request(`GET ${P}/one/log`))
  t.same([ok.status, ok.body, ok.headers], [200, '', { 'Content-Type': 'text/plain' }])
  t.equal(call(c, `GET ${P}/one/log?container=zz`).body.message, 'container zz is not valid for pod one')
  call(c, `POST ${P}`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'two' }, spec: { containers: [{ name: 'a', image: 'b' }, { name: 'c', image: 'd' }] } })
  t.equal(call(c, `GET ${P}/two/log`).body.message, 'a container name must be specified for pod two, choose one of: [a c]')
  call(c, `PATCH ${P}/two/status`, { status: { containerStatuses: [{ name: 'c', state: { waiting: { reason: 'ImagePullBackOff' } } }] } })
  t.equal(call(c, `GET ${P}/two/log?container=c`).body.message, 'container "c" in pod "two" is waiting to start: ImagePullBackOff')
  t.equal(call(c, `DELETE ${P}/two/log`).status, 405)
  t.equal(call(c, `GET /api/v1/namespaces/default/configmaps/x/log`).status, 404)
})
