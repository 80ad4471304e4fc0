/**
 * A uid sent with a write, as kube-apiserver treats it — what lets a server-side apply create an
 * object without ever changing somebody else's:
 * - an apply to a missing object takes the create-on-update path of
 *   apiserver registry/generic/registry/store.go `Update`, which fills the system fields: the uid is
 *   the server's, not the one sent, and metadata.uid is owned by nobody
 *   (fieldmanager/internal/stripmeta.go);
 * - an apply or a patch to an existing object keeps the uid it carries (registry/rest/update.go
 *   `BeforeUpdate`: "Use the existing UID if none is provided") and `ValidateObjectMetaUpdate`
 *   refuses its change: 422 `metadata.uid: Invalid value: "…": field is immutable`, nothing written;
 * - a PUT's uid is a precondition (rest/update.go `defaultUpdatedObjectInfo.Preconditions`): 409.
 */
import t from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import { call, deployment } from './support/sandbox-requests.ts'

const D = '/apis/apps/v1/namespaces/default/deployments'
const CM = '/api/v1/namespaces/default/configmaps'
const OURS = '00000000-0000-4000-8000-000000000001'

function replicas(name: string, n: number) {
  const d = deployment(name)
  return { ...d, spec: { ...(d.spec as object), replicas: n } }
}

function withUid<T extends { metadata: object }>(o: T, uid: string): T {
  return { ...o, metadata: { ...o.metadata, uid } }
}

t.test('an apply that creates ignores the uid it carries (store.go Update create path, FillObjectMetaSystemFields): 201, a server uid, only the Apply entry, uid owned by nobody (stripmeta.go)', async (t) => {
  const c = createCluster()
  const r = call(c, `PATCH ${D}/mc?fieldManager=op&force=true`, withUid(deployment('mc'), OURS), { type: 'apply' })
  t.equal(r.status, 201, JSON.stringify(r.body))
  t.not(r.body.metadata.uid, OURS)
  t.match(r.body.metadata.uid, /^[0-9a-f-]{36}$/)
  t.same(r.body.metadata.managedFields.map((e: { manager: string; operation: string }) => `${e.manager}/${e.operation}`), ['op/Apply'])
  t.notOk(JSON.stringify(r.body.metadata.managedFields).includes('f:uid'))
  t.equal(call(c, `GET ${D}/mc`).body.metadata.uid, r.body.metadata.uid)
})

t.test('an apply with another uid to an existing object is 422 "field is immutable" (rest/update.go BeforeUpdate, ValidateObjectMetaUpdate) and writes nothing', async (t) => {
  const c = createCluster()
  const first = call(c, `PATCH ${D}/mc?fieldManager=someone&force=true`, deployment('mc'), { type: 'apply' })
  t.equal(first.status, 201)
  const changed = replicas('mc', 3)
  const r = call(c, `PATCH ${D}/mc?fieldManager=op&force=true`, withUid(changed, OURS), { type: 'apply' })
  t.equal(r.status, 422, JSON.stringify(r.body))
  t.equal(r.body.reason, 'Invalid')
  t.equal(r.body.message, `Deployment.apps "mc" is invalid: metadata.uid: Invalid value: "${OURS}": field is immutable`)
  t.same(r.body.details, { name: 'mc', group: 'apps', kind: 'Deployment', causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: "${OURS}": field is immutable`, field: 'metadata.uid' }] })
  const after = call(c, `GET ${D}/mc`).body
  t.equal(after.metadata.resourceVersion, first.body.metadata.resourceVersion)
  t.equal(after.spec.replicas, 1)
  t.same(after.metadata.managedFields.map((e: { manager: string }) => e.manager), ['someone'])
})

t.test('an apply carrying the object\'s own uid applies as usual (BeforeUpdate keeps it, validation finds no change)', async (t) => {
  const c = createCluster()
  const first = call(c, `PATCH ${D}/mc?fieldManager=op&force=true`, deployment('mc'), { type: 'apply' })
  const r = call(c, `PATCH ${D}/mc?fieldManager=op&force=true`, withUid(replicas('mc', 2), first.body.metadata.uid), { type: 'apply' })
  t.equal(r.status, 200, JSON.stringify(r.body))
  t.equal(r.body.spec.replicas, 2)
  t.equal(r.body.metadata.uid, first.body.metadata.uid)
})

t.test('a merge or JSON patch changing the uid is 422 "field is immutable" (endpoints/handlers/patch.go: no uid precondition for a patch; ValidateObjectMetaUpdate)', async (t) => {
  const c = createCluster()
  const first = call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } })
  t.equal(first.status, 201)
  const merge = call(c, `PATCH ${CM}/x`, { metadata: { uid: OURS }, data: { a: '2' } })
  t.equal(merge.status, 422, JSON.stringify(merge.body))
  t.equal(merge.body.message, `ConfigMap "x" is invalid: metadata.uid: Invalid value: "${OURS}": field is immutable`)
  const json = call(c, `PATCH ${CM}/x`, [{ op: 'replace', path: '/metadata/uid', value: OURS }], { type: 'json' })
  t.equal(json.status, 422, JSON.stringify(json.body))
  t.equal(json.body.message, `ConfigMap "x" is invalid: metadata.uid: Invalid value: "${OURS}": field is immutable`)
  const after = call(c, `GET ${CM}/x`).body
  t.equal(after.metadata.resourceVersion, first.body.metadata.resourceVersion)
  t.same(after.data, { a: '1' })
})

t.test('a PUT with another uid stays a 409 precondition failure (rest/update.go defaultUpdatedObjectInfo.Preconditions)', async (t) => {
  const c = createCluster()
  const a = call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })
  const r = call(c, `PUT ${CM}/x`, { ...a.body, metadata: { ...a.body.metadata, uid: OURS } })
  t.equal(r.status, 409)
  t.equal(r.body.message, `Operation cannot be fulfilled on configmaps "x": Precondition failed: UID in precondition: ${OURS}, UID in object meta: ${a.body.metadata.uid}`)
})
