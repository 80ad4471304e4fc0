/**
 * Conformance of the sandbox API server to the reference (kube-apiserver-behaviour.md): one case
 * per behaviour it implements, each on a fresh cluster, named with the reference's section.
 */
import t, { type Test } from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import type { Cluster } from '../operator/sandbox/cluster.ts'
import { call, collect, configMap, deployment, request, widget, widgetCRDs, type Result } from './support/sandbox-requests.ts'
import { apiGroupList, apiResourceList, apiVersions } from '../operator/sandbox/discovery.ts'

const D = '/apis/apps/v1/namespaces/default/deployments'
const CM = '/api/v1/namespaces/default/configmaps'
const W = '/apis/test.example.com/v1/namespaces/default/widgets'
const G = '/apis/test.example.com/v1/namespaces/default/gadgets'

function fresh(): Cluster {
  const c = createCluster()
  for (const crd of widgetCRDs()) {
    const r = call(c, 'POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    if (r.status !== 201) throw new Error(JSON.stringify(r.body))
  }
  return c
}

function ok(tt: Tap, r: Result, status: number): void {
  tt.equal(r.status, status, JSON.stringify(r.body).slice(0, 400))
}

type Tap = Test

interface Case {
  ref: string
  name: string
  run(tt: Tap, c: Cluster): void | Promise<void>
}

const cases: Case[] = [
  // §1.1 server-side apply requests
  {
    ref: '1.1',
    name: 'apply without fieldManager is 422 with the real message',
    run(tt, c) {
      const r = call(c, `PATCH ${D}/x`, deployment('x'), { type: 'apply' })
      ok(tt, r, 422)
      tt.equal(r.body.message, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
      tt.equal(r.body.reason, 'Invalid')
      tt.same(r.body.details.causes, [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }])
    },
  },
  {
    ref: '1.1',
    name: 'force on a non-apply patch is 422',
    run(tt, c) {
      ok(tt, call(c, `POST ${D}`, deployment('x')), 201)
      const r = call(c, `PATCH ${D}/x?force=true&fieldManager=m`, { metadata: { labels: { a: 'b' } } })
      ok(tt, r, 422)
      tt.equal(r.body.message, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch')
    },
  },
  {
    ref: '1.1',
    name: 'apply with another apiVersion than the endpoint is 400',
    run(tt, c) {
      const r = call(c, `PATCH ${D}/x?fieldManager=m`, { ...deployment('x'), apiVersion: 'apps/v1beta1' }, { type: 'apply' })
      ok(tt, r, 400)
      tt.equal(r.body.message, 'Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1')
    },
  },
  {
    ref: '1.1',
    name: 'apply with managedFields in the body is 400',
    run(tt, c) {
      const d = deployment('x')
      d.metadata.managedFields = []
      const r = call(c, `PATCH ${D}/x?fieldManager=m`, d, { type: 'apply' })
      ok(tt, r, 400)
      tt.equal(r.body.message, 'metadata.managedFields must be nil')
    },
  },
  {
    ref: '1.1',
    name: 'apply creates with 201 (uid, creationTimestamp, generation 1), then answers 200',
    run(tt, c) {
      const first = call(c, `PATCH ${D}/x?fieldManager=m`, deployment('x'), { type: 'apply' })
      ok(tt, first, 201)
      tt.match(first.body.metadata, { uid: /^[0-9a-f-]{36}$/, creationTimestamp: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, generation: 1 })
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=m`, deployment('x'), { type: 'apply' }), 200)
    },
  },
  {
    ref: '1.1',
    name: 'apply accepts YAML text',
    run(tt, c) {
      const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  k: "on"\n'
      const r = call(c, `PATCH ${CM}/yml?fieldManager=m`, yaml, { type: 'apply' })
      ok(tt, r, 201)
      tt.same(r.body.data, { k: 'on' })
    },
  },
  {
    ref: '1.1',
    name: 'apply of a field the CRD schema does not declare is 500 "field not declared in schema"',
    run(tt, c) {
      const r = call(c, `PATCH ${W}/w?fieldManager=m`, widget('w', { size: 1, bogus: true }), { type: 'apply' })
      ok(tt, r, 500)
      tt.same(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'failed to create typed patch object (default/w; test.example.com/v1, Kind=Widget): .spec.bogus: field not declared in schema', code: 500 })
    },
  },
  {
    ref: '1.1',
    name: 'apply with duplicate list-map keys is 500 from the typed conversion',
    run(tt, c) {
      const d = deployment('x')
      ;(d.spec as { template: { spec: { containers: unknown[] } } }).template.spec.containers = [{ name: 'a', image: 'x' }, { name: 'a', image: 'y' }]
      const r = call(c, `PATCH ${D}/x?fieldManager=m`, d, { type: 'apply' })
      ok(tt, r, 500)
      tt.equal(r.body.reason, undefined)
      tt.match(r.body.message, /^failed to create typed patch object \(default\/x; apps\/v1, Kind=Deployment\): \.spec\.template\.spec\.containers: duplicate entries for key \[name="a"\]/)
    },
  },
  {
    ref: '1.1',
    name: 'a resourceVersion in an applied configuration is a precondition',
    run(tt, c) {
      const a = call(c, `PATCH ${CM}/x?fieldManager=m`, configMap('x'), { type: 'apply' })
      call(c, `PATCH ${CM}/x`, { data: { a: '2' } })
      const stale = call(c, `PATCH ${CM}/x?fieldManager=m`, { ...configMap('x'), metadata: { name: 'x', resourceVersion: a.body.metadata.resourceVersion } }, { type: 'apply' })
      ok(tt, stale, 409)
      tt.equal(stale.body.message, 'Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again')
      const cur = call(c, `GET ${CM}/x`).body.metadata.resourceVersion
      ok(tt, call(c, `PATCH ${CM}/x?fieldManager=m&force=true`, { ...configMap('x', { a: '3' }), metadata: { name: 'x', resourceVersion: cur } }, { type: 'apply' }), 200)
    },
  },
  // §1.2 managedFields
  {
    ref: '1.2',
    name: 'an apply records an Apply entry; a non-apply write is owned by fieldManager or the User-Agent prefix',
    run(tt, c) {
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' }), 201)
      const r = call(c, `PATCH ${D}/x`, { metadata: { labels: { extra: 'y' } } }, { userAgent: 'kubectl-label/v1.34.0 (linux/amd64)' })
      ok(tt, r, 200)
      const mf = r.body.metadata.managedFields as { manager: string; operation: string }[]
      tt.same(mf.map((m) => [m.manager, m.operation]), [['op', 'Apply'], ['kubectl-label', 'Update']])
      const q = call(c, `PATCH ${D}/x?fieldManager=named`, { metadata: { labels: { more: 'z' } } })
      tt.ok((q.body.metadata.managedFields as { manager: string }[]).some((m) => m.manager === 'named'))
    },
  },
  {
    ref: '1.2',
    name: 'a write to /status gets its own entry with subresource status',
    run(tt, c) {
      ok(tt, call(c, `POST ${D}`, deployment('x')), 201)
      const r = call(c, `PATCH ${D}/x/status?fieldManager=ctrl`, { status: { replicas: 3 } })
      ok(tt, r, 200)
      const mf = r.body.metadata.managedFields as { manager: string; subresource?: string }[]
      tt.match(mf.find((m) => m.manager === 'ctrl'), { operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:replicas': {} } } })
      tt.equal(mf.find((m) => m.manager === 'test-client')?.subresource, undefined)
    },
  },
  {
    ref: '1.2',
    name: 'an object without managedFields gets a before-first-apply owner at its first apply',
    run(tt, c) {
      ok(tt, call(c, `POST ${CM}`, configMap('x')), 201)
      const cleared = call(c, `PATCH ${CM}/x`, { metadata: { managedFields: [{}] } })
      ok(tt, cleared, 200)
      tt.equal(cleared.body.metadata.managedFields, undefined, 'managedFields [{}] clears them')
      const r = call(c, `PATCH ${CM}/x?fieldManager=op`, configMap('x', { b: '2' }), { type: 'apply' })
      ok(tt, r, 200)
      tt.same(r.body.metadata.managedFields.map((m: { manager: string; operation: string }) => [m.manager, m.operation]), [['op', 'Apply'], ['before-first-apply', 'Update']])
      tt.same(r.body.data, { a: '1', b: '2' }, 'fields owned by before-first-apply stay')
    },
  },
  // §1.3 apply algorithm
  {
    ref: '1.3',
    name: 'a field the applier stops applying and nobody else owns is removed',
    run(tt, c) {
      ok(tt, call(c, `PATCH ${CM}/x?fieldManager=op`, configMap('x', { a: '1', b: '2' }), { type: 'apply' }), 201)
      const r = call(c, `PATCH ${CM}/x?fieldManager=op`, configMap('x', { a: '1' }), { type: 'apply' })
      tt.same(r.body.data, { a: '1' })
      ok(tt, call(c, `PATCH ${CM}/x?fieldManager=other`, configMap('x', { a: '1' }), { type: 'apply' }), 200)
      const kept = call(c, `PATCH ${CM}/x?fieldManager=op`, { ...configMap('x'), data: {} }, { type: 'apply' })
      tt.same(kept.body.data, { a: '1' }, 'a value another applier also owns stays')
    },
  },
  {
    ref: '1.6',
    name: 'containers merge by name across appliers; a removed defaulted field comes back with its default',
    run(tt, c) {
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' }), 201)
      const side = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { template: { spec: { containers: [{ name: 'side', image: 'busybox' }] } } } }
      const r = call(c, `PATCH ${D}/x?fieldManager=sidecar`, side, { type: 'apply' })
      ok(tt, r, 200)
      tt.same(r.body.spec.template.spec.containers.map((x: { name: string }) => x.name), ['app', 'side'])
      tt.equal(r.body.spec.replicas, 1)
    },
  },
  // §1.4 conflicts
  {
    ref: '1.4',
    name: 'an apply of a field another manager changed is 409 with causes; force takes it',
    run(tt, c) {
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' }), 201)
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=kubectl-edit`, { spec: { replicas: 5 } }), 200)
      const r = call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' })
      ok(tt, r, 409)
      tt.equal(r.body.reason, 'Conflict')
      tt.equal(r.body.message, 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas')
      tt.same(r.body.details.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "kubectl-edit" using apps/v1', field: '.spec.replicas' }])
      const f = call(c, `PATCH ${D}/x?fieldManager=op&force=true`, deployment('x'), { type: 'apply' })
      ok(tt, f, 200)
      tt.equal(f.body.spec.replicas, 1)
    },
  },
  // §1.5 no-op writes
  {
    ref: '1.5',
    name: 'an apply that changes nothing keeps resourceVersion and emits no event',
    run(tt, c) {
      const a = call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' })
      const w = collect(c, `GET ${D}?watch=true&resourceVersion=${a.body.metadata.resourceVersion}`)
      const b = call(c, `PATCH ${D}/x?fieldManager=op`, deployment('x'), { type: 'apply' })
      ok(tt, b, 200)
      tt.equal(b.body.metadata.resourceVersion, a.body.metadata.resourceVersion)
      tt.same(b.body.metadata.managedFields, a.body.metadata.managedFields)
      tt.same(w.events, [])
      w.stop()
    },
  },
  {
    ref: '1.5',
    name: 'a PUT or patch that changes nothing keeps resourceVersion and emits no event',
    run(tt, c) {
      const a = call(c, `POST ${CM}`, configMap('x'))
      const w = collect(c, `GET ${CM}?watch=1&resourceVersion=${a.body.metadata.resourceVersion}`)
      const put = call(c, `PUT ${CM}/x`, a.body)
      ok(tt, put, 200)
      tt.equal(put.body.metadata.resourceVersion, a.body.metadata.resourceVersion)
      const patch = call(c, `PATCH ${CM}/x`, { data: { a: '1' } })
      tt.equal(patch.body.metadata.resourceVersion, a.body.metadata.resourceVersion)
      tt.same(w.events, [])
      w.stop()
    },
  },
  {
    ref: '1.5',
    name: 'an apply that only adds an owner bumps resourceVersion',
    run(tt, c) {
      const a = call(c, `PATCH ${CM}/x?fieldManager=one`, configMap('x'), { type: 'apply' })
      const b = call(c, `PATCH ${CM}/x?fieldManager=two`, configMap('x'), { type: 'apply' })
      ok(tt, b, 200)
      tt.not(b.body.metadata.resourceVersion, a.body.metadata.resourceVersion)
      tt.equal(b.body.metadata.managedFields.length, 2)
    },
  },
  {
    ref: '1.5',
    name: 'dryRun=All persists nothing (apply create, update, delete)',
    run(tt, c) {
      const rv = c.store.resourceVersion
      ok(tt, call(c, `PATCH ${D}/x?fieldManager=op&dryRun=All`, deployment('x'), { type: 'apply' }), 201)
      tt.equal(call(c, `GET ${D}/x`).status, 404)
      ok(tt, call(c, `POST ${CM}?dryRun=All`, configMap('y')), 201)
      tt.equal(call(c, `GET ${CM}/y`).status, 404)
      tt.equal(c.store.resourceVersion, rv)
      const made = call(c, `POST ${CM}`, configMap('z'))
      const d = call(c, `PATCH ${CM}/z?dryRun=All`, { data: { a: '2' } })
      tt.equal(d.body.data.a, '2')
      tt.equal(call(c, `GET ${CM}/z`).body.data.a, '1')
      ok(tt, call(c, `DELETE ${CM}/z?dryRun=All`), 200)
      tt.equal(call(c, `GET ${CM}/z`).body.metadata.resourceVersion, made.body.metadata.resourceVersion)
    },
  },
  // §2 PUT and non-apply PATCH
  {
    ref: '2',
    name: 'a stale resourceVersion is 409 with the optimistic-lock message',
    run(tt, c) {
      const a = call(c, `POST ${D}`, deployment('x'))
      ok(tt, call(c, `PATCH ${D}/x`, { metadata: { labels: { b: 'c' } } }), 200)
      const r = call(c, `PUT ${D}/x`, a.body)
      ok(tt, r, 409)
      tt.equal(r.body.message, 'Operation cannot be fulfilled on deployments.apps "x": the object has been modified; please apply your changes to the latest version and try again')
      tt.same(r.body.details, { name: 'x', group: 'apps', kind: 'deployments' })
    },
  },
  {
    ref: '2',
    name: 'a uid in the body is a precondition: another uid is 409',
    run(tt, c) {
      const a = call(c, `POST ${CM}`, configMap('x'))
      const r = call(c, `PUT ${CM}/x`, { ...a.body, metadata: { ...a.body.metadata, uid: 'other' } })
      ok(tt, r, 409)
      tt.equal(r.body.message, `Operation cannot be fulfilled on configmaps "x": Precondition failed: UID in precondition: other, UID in object meta: ${a.body.metadata.uid}`)
    },
  },
  {
    ref: '2',
    name: 'PUT without resourceVersion: allowed for Deployment, 422 for a custom resource',
    run(tt, c) {
      ok(tt, call(c, `POST ${D}`, deployment('x')), 201)
      const d = deployment('x')
      ;(d.spec as { replicas: number }).replicas = 3
      ok(tt, call(c, `PUT ${D}/x`, d), 200)
      ok(tt, call(c, `POST ${W}`, widget('w')), 201)
      const r = call(c, `PUT ${W}/w`, widget('w', { size: 3 }))
      ok(tt, r, 422)
      tt.equal(r.body.message, 'Widget.test.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update')
    },
  },
  {
    ref: '2',
    name: 'generation: 1 on create; Deployment +1 on spec or annotation change, not on labels',
    run(tt, c) {
      tt.equal(call(c, `POST ${D}`, deployment('x')).body.metadata.generation, 1)
      tt.equal(call(c, `PATCH ${D}/x`, { metadata: { labels: { l: '1' } } }).body.metadata.generation, 1)
      tt.equal(call(c, `PATCH ${D}/x`, { spec: { replicas: 4 } }).body.metadata.generation, 2)
      tt.equal(call(c, `PATCH ${D}/x`, { metadata: { annotations: { a: '1' } } }).body.metadata.generation, 3)
      tt.equal(call(c, `PATCH ${D}/x/status`, { status: { replicas: 4 } }).body.metadata.generation, 3)
    },
  },
  {
    ref: '2',
    name: 'generation: PDB +1 on spec change; Service and ConfigMap have none',
    run(tt, c) {
      const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'p' }, spec: { minAvailable: 1, selector: { matchLabels: { a: 'b' } } } }
      tt.equal(call(c, 'POST /apis/policy/v1/namespaces/default/poddisruptionbudgets', pdb).body.metadata.generation, 1)
      tt.equal(call(c, 'PATCH /apis/policy/v1/namespaces/default/poddisruptionbudgets/p', { spec: { minAvailable: 2 } }).body.metadata.generation, 2)
      const svc = call(c, 'POST /api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80 }] } })
      tt.equal(svc.body.metadata.generation, undefined)
      tt.equal(call(c, `POST ${CM}`, configMap('c')).body.metadata.generation, undefined)
    },
  },
  {
    ref: '2',
    name: 'generation: a CR without status subresource bumps on any non-metadata change, status included',
    run(tt, c) {
      const g = { apiVersion: 'test.example.com/v1', kind: 'Gadget', metadata: { name: 'g' }, spec: { a: 1 } }
      tt.equal(call(c, `POST ${G}`, g).body.metadata.generation, 1)
      tt.equal(call(c, `PATCH ${G}/g`, { metadata: { labels: { x: 'y' } } }).body.metadata.generation, 1)
      tt.equal(call(c, `PATCH ${G}/g`, { status: { ready: true } }).body.metadata.generation, 2)
      tt.equal(call(c, `PATCH ${G}/g`, { spec: { a: 2 } }).body.metadata.generation, 3)
    },
  },
  {
    ref: '2',
    name: 'status subresource: create clears status, the main endpoint ignores status, /status ignores the rest',
    run(tt, c) {
      const created = call(c, `POST ${W}`, { ...widget('w'), status: { replicas: 9 } })
      tt.equal(created.body.status, undefined)
      const main = call(c, `PATCH ${W}/w`, { spec: { size: 3 }, status: { replicas: 7 } })
      tt.equal(main.body.status, undefined)
      tt.equal(main.body.spec.size, 3)
      tt.equal(main.body.metadata.generation, 2)
      const st = call(c, `PATCH ${W}/w/status`, { spec: { size: 10 }, status: { replicas: 2 }, metadata: { labels: { ignored: 'yes' } } })
      ok(tt, st, 200)
      tt.same(st.body.status, { replicas: 2 })
      tt.equal(st.body.spec.size, 3)
      tt.equal(st.body.metadata.labels, undefined)
      tt.equal(st.body.metadata.generation, 2)
      const dep = call(c, `POST ${D}`, { ...deployment('x'), status: { replicas: 9 } })
      tt.same(dep.body.status, {})
    },
  },
  {
    ref: '2',
    name: 'strategic merge patch works on built-ins and is 415 for custom resources',
    run(tt, c) {
      ok(tt, call(c, `POST ${D}`, deployment('x')), 201)
      const r = call(c, `PATCH ${D}/x`, { spec: { template: { spec: { containers: [{ name: 'side', image: 'busybox' }] } } } }, { type: 'strategic' })
      ok(tt, r, 200)
      tt.same(r.body.spec.template.spec.containers.map((x: { name: string }) => x.name).sort(), ['app', 'side'])
      ok(tt, call(c, `POST ${W}`, widget('w')), 201)
      const u = call(c, `PATCH ${W}/w`, { spec: { size: 1 } }, { type: 'strategic' })
      ok(tt, u, 415)
      tt.equal(u.body.reason, 'UnsupportedMediaType')
    },
  },
  {
    ref: '2',
    name: 'strategic merge patch: $setElementOrder orders the list; a list item without its merge key is answered raw (500, no reason)',
    run(tt, c) {
      const d = deployment('x')
      ;(d.spec as { template: { spec: { containers: unknown[] } } }).template.spec.containers.push({ name: 'side', image: 'busybox' })
      ok(tt, call(c, `POST ${D}`, d), 201)
      const r = call(c, `PATCH ${D}/x`, { spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'side' }, { name: 'app' }], containers: [{ name: 'side', image: 'busybox:2' }] } } } }, { type: 'strategic' })
      ok(tt, r, 200)
      tt.same(r.body.spec.template.spec.containers.map((x: { name: string; image: string }) => `${x.name}=${x.image}`), ['side=busybox:2', 'app=memcached:1.6'])
      const bad = call(c, `PATCH ${D}/x`, { spec: { template: { spec: { containers: [{ image: 'nginx' }] } } } }, { type: 'strategic' })
      ok(tt, bad, 500)
      tt.equal(bad.body.reason, undefined, 'StatusReasonUnknown is empty, and omitted')
      tt.equal(bad.body.message, 'map: map[image:nginx] does not contain declared merge key: name')
    },
  },
  {
    ref: '2',
    name: 'json patch and merge patch (null deletes) apply to the live object',
    run(tt, c) {
      ok(tt, call(c, `POST ${CM}`, configMap('x', { a: '1', b: '2' })), 201)
      tt.same(call(c, `PATCH ${CM}/x`, [{ op: 'replace', path: '/data/a', value: '9' }], { type: 'json' }).body.data, { a: '9', b: '2' })
      tt.same(call(c, `PATCH ${CM}/x`, { data: { b: null, c: '3' } }).body.data, { a: '9', c: '3' })
      const bad = call(c, `PATCH ${CM}/x`, [{ op: 'remove', path: '/data/nope' }], { type: 'json' })
      ok(tt, bad, 422)
    },
  },
  {
    ref: '2',
    name: 'adding a finalizer to a deleting object is 422',
    run(tt, c) {
      ok(tt, call(c, `POST ${CM}`, { ...configMap('x'), metadata: { name: 'x', finalizers: ['a/b'] } }), 201)
      ok(tt, call(c, `DELETE ${CM}/x`), 200)
      const r = call(c, `PATCH ${CM}/x`, { metadata: { finalizers: ['a/b', 'c/d'] } })
      ok(tt, r, 422)
      tt.equal(r.body.message, 'ConfigMap "x" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted')
    },
  },
  // §3 defaulting
  {
    ref: '3',
    name: 'built-ins are defaulted on create (Deployment, containers)',
    run(tt, c) {
      const r = call(c, `POST ${D}`, { ...deployment('x'), spec: { ...(deployment('x').spec as object), replicas: undefined } })
      tt.match(r.body.spec, { replicas: 1, revisionHistoryLimit: 10, progressDeadlineSeconds: 600, strategy: { type: 'RollingUpdate' } })
      tt.match(r.body.spec.template.spec, { dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', containers: [{ imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log' }] })
    },
  },
  {
    ref: '3',
    name: 'Service gets a 10.96 clusterIP mirrored in clusterIPs; headless keeps None; updates keep the IP',
    run(tt, c) {
      const s = call(c, 'POST /api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80 }] } })
      tt.match(s.body.spec.clusterIP, /^10\.96\.\d+\.\d+$/)
      tt.same(s.body.spec.clusterIPs, [s.body.spec.clusterIP])
      tt.match(s.body.spec.ports, [{ port: 80, protocol: 'TCP', targetPort: 80 }])
      const h = call(c, 'POST /api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'h' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } })
      tt.same(h.body.spec.clusterIPs, ['None'])
      const put = call(c, 'PUT /api/v1/namespaces/default/services/s', { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 81 }] } })
      ok(tt, put, 200)
      tt.equal(put.body.spec.clusterIP, s.body.spec.clusterIP)
      const svc = (name: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] } })
      const dry = call(c, 'POST /api/v1/namespaces/default/services?dryRun=All', svc('d'))
      const next = call(c, 'POST /api/v1/namespaces/default/services', svc('n'))
      tt.equal(next.body.spec.clusterIP, dry.body.spec.clusterIP, 'a dry run reserves no address')
      tt.not(next.body.spec.clusterIP, s.body.spec.clusterIP)
      call(c, 'DELETE /api/v1/namespaces/default/services/s')
      tt.equal(call(c, 'POST /api/v1/namespaces/default/services', svc('again')).body.spec.clusterIP, s.body.spec.clusterIP, 'a deleted Service frees its address')
    },
  },
  {
    ref: '3',
    name: 'quantities are stored in canonical form',
    run(tt, c) {
      const d = deployment('q')
      ;(d.spec as { template: { spec: { containers: { resources?: unknown }[] } } }).template.spec.containers[0]!.resources = { limits: { cpu: '0.5', memory: '1024Mi' }, requests: { cpu: '100m' } }
      const r = call(c, `POST ${D}`, d)
      tt.same(r.body.spec.template.spec.containers[0].resources, { limits: { cpu: '500m', memory: '1Gi' }, requests: { cpu: '100m' } })
    },
  },
  {
    ref: '3',
    name: 'a quantity the parser finds canonical keeps its spelling (resource.ParseQuantity caches it), the others are rewritten',
    run(tt, c) {
      const d = deployment('q')
      ;(d.spec as { template: { spec: { containers: { resources?: unknown }[] } } }).template.spec.containers[0]!.resources = {
        limits: { cpu: '+1', memory: '1E6', 'ephemeral-storage': '100.035k' },
        requests: { cpu: '1.', memory: '01Ki', 'ephemeral-storage': '2048Ki' },
      }
      const r = call(c, `POST ${D}`, d)
      ok(tt, r, 201)
      tt.same(r.body.spec.template.spec.containers[0].resources, {
        limits: { cpu: '+1', memory: '1E6', 'ephemeral-storage': '100.035k' },
        requests: { cpu: '1.', memory: '01Ki', 'ephemeral-storage': '2Mi' },
      })
      tt.same(call(c, `GET ${D}/q`).body.spec.template.spec.containers[0].resources.limits, { cpu: '+1', memory: '1E6', 'ephemeral-storage': '100.035k' }, 'and after the stored round trip')
    },
  },
  // §4 list and watch
  {
    ref: '4',
    name: 'list: kind, apiVersion, global resourceVersion; built-in items carry no kind',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a'))
      call(c, `POST ${D}`, deployment('d'))
      const l = call(c, `GET ${CM}`)
      tt.equal(l.body.kind, 'ConfigMapList')
      tt.equal(l.body.apiVersion, 'v1')
      tt.equal(l.body.metadata.resourceVersion, String(c.store.resourceVersion))
      tt.equal(l.body.items.length, 1)
      tt.equal(l.body.items[0].kind, undefined)
      call(c, `POST ${W}`, widget('w'))
      tt.equal(call(c, `GET ${W}`).body.items[0].kind, 'Widget')
    },
  },
  {
    ref: '4',
    name: 'resourceVersions are global decimal strings that increase with every write',
    run(tt, c) {
      const a = Number(call(c, `POST ${CM}`, configMap('a')).body.metadata.resourceVersion)
      const b = Number(call(c, `POST ${D}`, deployment('d')).body.metadata.resourceVersion)
      const d = Number(call(c, `PATCH ${CM}/a`, { data: { a: '2' } }).body.metadata.resourceVersion)
      tt.ok(a < b && b < d)
    },
  },
  {
    ref: '4',
    name: 'list with a label selector (=, !=, in, notin, exists, !key)',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a', {}, { tier: 'web', env: 'prod' }))
      call(c, `POST ${CM}`, configMap('b', {}, { tier: 'db' }))
      call(c, `POST ${CM}`, configMap('c', {}, {}))
      const names = (sel: string): string[] => call(c, `GET ${CM}?labelSelector=${encodeURIComponent(sel)}`).body.items.map((i: { metadata: { name: string } }) => i.metadata.name)
      tt.same(names('tier=web'), ['a'])
      tt.same(names('tier==db'), ['b'])
      tt.same(names('tier!=web'), ['b', 'c'])
      tt.same(names('tier in (web,db)'), ['a', 'b'])
      tt.same(names('tier notin (web)'), ['b', 'c'])
      tt.same(names('env'), ['a'])
      tt.same(names('!env'), ['b', 'c'])
      tt.same(names('tier,!env'), ['b'])
      ok(tt, call(c, `GET ${CM}?labelSelector=${encodeURIComponent('a in b')}`), 400)
    },
  },
  {
    ref: '6',
    name: 'a bad label key gets one cause per IsQualifiedName message (ValidateLabelName)',
    run(tt, c) {
      const r = call(c, `POST ${CM}`, configMap('x', {}, { 'example.com/': 'v' }))
      ok(tt, r, 422)
      tt.same(
        r.body.details.causes.map((x: { message: string }) => x.message),
        [
          'Invalid value: "example.com/": name part must be non-empty',
          `Invalid value: "example.com/": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        ],
      )
    },
  },
  {
    ref: '4',
    name: 'list with a label selector using > and < (labels.Parse gt/lt), keys and values validated',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a', {}, { rank: '1' }))
      call(c, `POST ${CM}`, configMap('b', {}, { rank: '5' }))
      call(c, `POST ${CM}`, configMap('c', {}, { rank: 'x' }))
      const names = (sel: string): string[] => call(c, `GET ${CM}?labelSelector=${encodeURIComponent(sel)}`).body.items.map((i: { metadata: { name: string } }) => i.metadata.name)
      tt.same(names('rank>1'), ['b'])
      tt.same(names('rank<5'), ['a'])
      tt.same(names('rank>0,rank<9'), ['a', 'b'])
      const bad = call(c, `GET ${CM}?labelSelector=${encodeURIComponent('rank<x')}`)
      ok(tt, bad, 400)
      tt.equal(bad.body.message, `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`)
      const badKey = call(c, `GET ${CM}?labelSelector=${encodeURIComponent('a/b/c=d')}`)
      ok(tt, badKey, 400)
      tt.match(badKey.body.message, /^unable to parse requirement: <nil>: Invalid value: "a\/b\/c": a qualified name must consist of/)
      ok(tt, call(c, `GET ${CM}?labelSelector=${encodeURIComponent('a=b@c')}`), 400)
    },
  },
  {
    ref: '4',
    name: 'a field selector value takes backslash escapes (fields.ParseSelector), an unescaped = or , is refused',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a'))
      const list = (sel: string): Result => call(c, `GET ${CM}?fieldSelector=${encodeURIComponent(sel)}`)
      tt.same(list('metadata.name=a').body.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a'])
      const escaped = list('metadata.name=a\\=b')
      ok(tt, escaped, 200)
      tt.same(escaped.body.items, [])
      const bad = list('metadata.name=a=b')
      ok(tt, bad, 400)
      tt.equal(bad.body.message, 'invalid field selector: unescaped character in value: 61')
      tt.equal(list('metadata.name=a\\x').body.message, 'invalid field selector: invalid escape sequence: \\x')
    },
  },
  {
    ref: '4',
    name: 'list pages with limit and continue',
    run(tt, c) {
      for (const n of ['a', 'b', 'c']) call(c, `POST ${CM}`, configMap(n))
      const p1 = call(c, `GET ${CM}?limit=2`)
      tt.equal(p1.body.items.length, 2)
      tt.equal(p1.body.metadata.remainingItemCount, 1)
      const p2 = call(c, `GET ${CM}?limit=2&continue=${p1.body.metadata.continue}`)
      tt.same(p2.body.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['c'])
      tt.equal(p2.body.metadata.continue, undefined)
      // Across namespaces whose names sort differently from "namespace/name" strings.
      for (const ns of ['a', 'a-x']) {
        call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
        call(c, `POST /api/v1/namespaces/${ns}/configmaps`, configMap('z'))
      }
      const seen: string[] = []
      let token = ''
      do {
        const page = call(c, `GET /api/v1/configmaps?limit=1${token ? `&continue=${token}` : ''}`)
        seen.push(...page.body.items.map((i: { metadata: { namespace: string; name: string } }) => `${i.metadata.namespace}/${i.metadata.name}`))
        token = page.body.metadata.continue ?? ''
      } while (token)
      tt.same(seen, ['a/z', 'a-x/z', 'default/a', 'default/b', 'default/c'])
    },
  },
  {
    ref: '4',
    name: 'watch from resourceVersion N delivers the events after N; DELETED carries the deletion resourceVersion',
    run(tt, c) {
      const a = call(c, `POST ${CM}`, configMap('a'))
      call(c, `PATCH ${CM}/a`, { data: { a: '2' } })
      const w = collect(c, `GET ${CM}?watch=true&resourceVersion=${a.body.metadata.resourceVersion}`)
      const del = call(c, `DELETE ${CM}/a`)
      ok(tt, del, 200)
      tt.same(w.events.map((e) => e.type), ['MODIFIED', 'DELETED'])
      const last = w.events[1]?.object as { metadata: { resourceVersion: string } }
      tt.equal(last.metadata.resourceVersion, String(c.store.resourceVersion))
      w.stop()
    },
  },
  {
    ref: '4',
    name: 'watch without resourceVersion (or "0") starts with synthetic ADDED events',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a'))
      call(c, `POST ${CM}`, configMap('b'))
      for (const q of ['', '&resourceVersion=0']) {
        const w = collect(c, `GET ${CM}?watch=true${q}`)
        tt.same(w.events.map((e) => [e.type, (e.object as { metadata: { name: string } }).metadata.name]), [['ADDED', 'a'], ['ADDED', 'b']])
        w.stop()
      }
    },
  },
  {
    ref: '4',
    name: 'a label-selector watch sees objects leave (DELETED) and enter (ADDED)',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a', {}, { sel: 'yes' }))
      const w = collect(c, `GET ${CM}?watch=true&labelSelector=sel%3Dyes`)
      call(c, `PATCH ${CM}/a`, { metadata: { labels: { sel: 'no' } } })
      call(c, `PATCH ${CM}/a`, { metadata: { labels: { sel: 'yes' } } })
      call(c, `PATCH ${CM}/a`, { data: { x: '1' } })
      tt.same(w.events.map((e) => e.type), ['ADDED', 'DELETED', 'ADDED', 'MODIFIED'])
      w.stop()
    },
  },
  {
    ref: '4',
    name: 'a watch from a compacted resourceVersion gets one 410 Expired ERROR event and closes',
    run(tt, c) {
      call(c, `POST ${CM}`, configMap('a'))
      const old = c.store.resourceVersion
      call(c, `PATCH ${CM}/a`, { data: { a: '2' } })
      c.store.compact()
      const w = collect(c, `GET ${CM}?watch=true&resourceVersion=${old - 1}`)
      tt.equal(w.events.length, 1)
      tt.equal(w.events[0]?.type, 'ERROR')
      tt.match(w.events[0]?.object, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: `too old resource version: ${old - 1} (${c.store.resourceVersion + 1})` })
    },
  },
  // §5 deletion
  {
    ref: '5',
    name: 'DELETE without finalizers answers a Success Status with details (core: no group)',
    run(tt, c) {
      const d = call(c, `POST ${D}`, deployment('x'))
      const r = call(c, `DELETE ${D}/x`)
      ok(tt, r, 200)
      tt.same(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'x', group: 'apps', kind: 'deployments', uid: d.body.metadata.uid } })
      const cm = call(c, `POST ${CM}`, configMap('c'))
      tt.same(call(c, `DELETE ${CM}/c`).body.details, { name: 'c', kind: 'configmaps', uid: cm.body.metadata.uid })
      tt.equal(call(c, `GET ${D}/x`).status, 404)
    },
  },
  {
    ref: '5',
    name: 'DELETE of a Pod or ServiceAccount answers the deleted object',
    run(tt, c) {
      call(c, 'POST /api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'a', image: 'b' }] } })
      tt.equal(call(c, 'DELETE /api/v1/namespaces/default/pods/p').body.kind, 'Pod')
      call(c, 'POST /api/v1/namespaces/default/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 's' } })
      tt.equal(call(c, 'DELETE /api/v1/namespaces/default/serviceaccounts/s').body.kind, 'ServiceAccount')
    },
  },
  {
    ref: '5',
    name: 'DELETE with finalizers sets deletionTimestamp, grace 0, bumps generation; emptying finalizers removes it',
    run(tt, c) {
      const d = deployment('x')
      d.metadata.finalizers = ['example.com/hold']
      call(c, `POST ${D}`, d)
      const w = collect(c, `GET ${D}?watch=true&resourceVersion=${c.store.resourceVersion}`)
      const r = call(c, `DELETE ${D}/x`)
      ok(tt, r, 200)
      tt.equal(r.body.kind, 'Deployment')
      tt.match(r.body.metadata, { deletionTimestamp: /Z$/, deletionGracePeriodSeconds: 0, generation: 2 })
      const gone = call(c, `PATCH ${D}/x`, { metadata: { finalizers: null } })
      ok(tt, gone, 200)
      tt.equal(call(c, `GET ${D}/x`).status, 404)
      tt.same(w.events.map((e) => e.type), ['MODIFIED', 'DELETED'])
      w.stop()
    },
  },
  {
    ref: '5',
    name: 'propagationPolicy Foreground adds foregroundDeletion, Orphan adds orphan, Background deletes at once',
    run(tt, c) {
      for (const n of ['f', 'o', 'b']) call(c, `POST ${D}`, deployment(n))
      tt.same(call(c, `DELETE ${D}/f?propagationPolicy=Foreground`).body.metadata.finalizers, ['foregroundDeletion'])
      tt.same(call(c, `DELETE ${D}/o`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Orphan' }).body.metadata.finalizers, ['orphan'])
      tt.equal(call(c, `DELETE ${D}/b?propagationPolicy=Background`).body.status, 'Success')
      tt.equal(call(c, `GET ${D}/f`).status, 200)
      tt.equal(call(c, `GET ${D}/b`).status, 404)
    },
  },
  // §6 discovery and CRDs
  {
    ref: '6',
    name: 'a CRD is Established and its resource appears in discovery with status and scale',
    run(tt, c) {
      const crd = call(c, 'GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.example.com')
      tt.match(crd.body.status.conditions, [{ type: 'NamesAccepted', status: 'True', reason: 'NoConflicts' }, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted' }])
      ok(tt, call(c, `GET ${W}`), 200)
      ok(tt, call(c, 'DELETE /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.example.com'), 200)
      ok(tt, call(c, `GET ${W}`), 404)
    },
  },
  {
    ref: '6',
    name: 'custom resources are validated (422 Invalid with causes) and defaulted from the schema',
    run(tt, c) {
      const r = call(c, `POST ${W}`, widget('w', { size: -1 }))
      ok(tt, r, 422)
      tt.equal(r.body.message, 'Widget.test.example.com "w" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0')
      tt.same(r.body.details.causes, [{ reason: 'FieldValueInvalid', message: 'Invalid value: -1: spec.size in body should be greater than or equal to 0', field: 'spec.size' }])
      tt.equal(call(c, `POST ${W}`, widget('d', { color: 'red' })).body.spec.size, 1)
    },
  },
  {
    ref: '6',
    name: 'unknown fields of a custom resource are pruned with a Warning header (Strict: 400)',
    run(tt, c) {
      const r = call(c, `POST ${W}`, widget('w', { size: 1, bogus: true }))
      ok(tt, r, 201)
      tt.equal(r.body.spec.bogus, undefined)
      tt.match(r.headers.Warning, /unknown field \\"spec.bogus\\"/)
      ok(tt, call(c, `POST ${W}?fieldValidation=Strict`, widget('s', { bogus: 1 })), 400)
    },
  },
  {
    ref: '6',
    name: 'discovery lists a served resource with singularName, verbs, shortNames, categories and its subresources',
    run(tt, c) {
      const list = apiResourceList(c.registry, 'test.example.com', 'v1') as { groupVersion: string; resources: Record<string, unknown>[] }
      tt.equal(list.groupVersion, 'test.example.com/v1')
      tt.same(list.resources.find((r) => r.name === 'widgets'), { name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'], shortNames: ['wd'], categories: ['all'] })
      tt.same(list.resources.find((r) => r.name === 'widgets/status'), { name: 'widgets/status', singularName: '', namespaced: true, kind: 'Widget', verbs: ['get', 'patch', 'update'] })
      tt.same(list.resources.find((r) => r.name === 'widgets/scale'), { name: 'widgets/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] })
      tt.same(apiVersions('127.0.0.1:1'), { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:1' }] })
      tt.match(apiGroupList(c.registry), { kind: 'APIGroupList', groups: [{ name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }], preferredVersion: { groupVersion: 'apps/v1', version: 'v1' } }] })
    },
  },
  // §7 error Status
  {
    ref: '7',
    name: 'NotFound and AlreadyExists messages (core resources have no group)',
    run(tt, c) {
      tt.same(call(c, `GET ${D}/nope`).body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'deployments.apps "nope" not found', reason: 'NotFound', details: { name: 'nope', group: 'apps', kind: 'deployments' }, code: 404 })
      tt.equal(call(c, `GET ${CM}/nope`).body.message, 'configmaps "nope" not found')
      call(c, `POST ${CM}`, configMap('a'))
      const r = call(c, `POST ${CM}`, configMap('a'))
      ok(tt, r, 409)
      tt.equal(r.body.reason, 'AlreadyExists')
      tt.equal(r.body.message, 'configmaps "a" already exists')
    },
  },
  {
    ref: '7',
    name: 'a namespaced object needs its namespace: 404 namespaces "x" not found',
    run(tt, c) {
      const r = call(c, 'POST /api/v1/namespaces/missing/configmaps', configMap('a'))
      ok(tt, r, 404)
      tt.equal(r.body.message, 'namespaces "missing" not found')
      ok(tt, call(c, 'POST /api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'missing' } }), 201)
      ok(tt, call(c, 'POST /api/v1/namespaces/missing/configmaps', configMap('a')), 201)
    },
  },
  {
    ref: '7',
    name: '429 TooManyRequests carries Retry-After; 415 UnsupportedMediaType names the accepted types',
    run(tt, c) {
      c.faults.set('throttle-rate=1,retry-after-s=2')
      return c.handle({ ...request(`GET ${CM}`), injectFaults: true }).then((r) => {
        c.faults.set({})
        tt.equal(r.status, 429)
        tt.same(r.headers, { 'Retry-After': '2' })
        tt.same(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Too many requests, please try again later.', reason: 'TooManyRequests', details: { retryAfterSeconds: 2 }, code: 429 })
        call(c, `POST ${W}`, widget('w'))
        const u = call(c, `PATCH ${W}/w`, { spec: {} }, { type: 'strategic' })
        tt.equal(u.body.message, 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/apply-patch+cbor')
      })
    },
  },
  {
    ref: '7',
    name: 'namespaces default and kube-system exist at start',
    run(tt, c) {
      tt.same(call(c, 'GET /api/v1/namespaces').body.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['default', 'kube-system'])
    },
  },
  {
    ref: '2',
    name: 'generateName appends five characters',
    run(tt, c) {
      const r = call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'gen-' } })
      ok(tt, r, 201)
      tt.match(r.body.metadata.name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/)
    },
  },
  // Scale subresource (§2 subresources)
  {
    ref: '2',
    name: 'scale subresource of a Deployment: GET, PUT, and merge PATCH as kubectl scale sends it',
    run(tt, c) {
      call(c, `POST ${D}`, deployment('x'))
      const s = call(c, `GET ${D}/x/scale`)
      tt.match(s.body, { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: 'x', namespace: 'default' }, spec: { replicas: 1 }, status: { replicas: 0, selector: 'app=x' } })
      const put = call(c, `PUT ${D}/x/scale`, { ...s.body, spec: { replicas: 3 } })
      ok(tt, put, 200)
      tt.equal(put.body.spec.replicas, 3)
      ok(tt, call(c, `PATCH ${D}/x/scale`, { spec: { replicas: 4 } }), 200)
      const d = call(c, `GET ${D}/x`)
      tt.equal(d.body.spec.replicas, 4)
      tt.equal(d.body.metadata.generation, 3)
      ok(tt, call(c, `PUT ${D}/x/scale`, { ...s.body, spec: { replicas: 5 } }), 409)
    },
  },
  {
    ref: '2',
    name: 'scale subresource of a custom resource follows the CRD paths',
    run(tt, c) {
      call(c, `POST ${W}`, widget('w', { size: 2 }))
      call(c, `PATCH ${W}/w/status`, { status: { replicas: 2, selector: 'app=w' } })
      tt.match(call(c, `GET ${W}/w/scale`).body, { spec: { replicas: 2 }, status: { replicas: 2, selector: 'app=w' } })
      ok(tt, call(c, `PATCH ${W}/w/scale`, { spec: { replicas: 5 } }), 200)
      tt.equal(call(c, `GET ${W}/w`).body.spec.size, 5)
      ok(tt, call(c, `PATCH ${W}/w/scale`, { spec: { replicas: -1 } }), 422)
    },
  },
]

for (const k of cases) {
  t.test(`§${k.ref} ${k.name}`, async (tt) => {
    await k.run(tt, fresh())
  })
}
