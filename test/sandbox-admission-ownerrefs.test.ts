/**
 * OwnerReferencesPermissionEnforcement as kube-apiserver runs it (plugin/pkg/admission/gc/gc_admission.go):
 * changing an object's ownerReferences needs `delete` on the object; newly setting
 * blockOwnerDeletion needs `update` on the owner's `finalizers`; the 403 messages are upstream's.
 */
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>

async function bed(t: Test): Promise<{ admin: Call; bot: Call }> {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const as = (token: string): Call => async (method, path, body) => {
    const res = await fetch(sb.url + path, { method, headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    return { status: res.status, json: await res.json() }
  }
  return { admin: as('sandbox'), bot: as(sb.issueToken({ user: 'system:serviceaccount:ops:bot' })) }
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1/namespaces/default'
const CM = '/api/v1/namespaces/default/configmaps'
/** Grants the bot `rules` through one more Role and RoleBinding named `name`. */
const grant = async (admin: Call, name: string, rules: unknown[]) => {
  const role = await admin('POST', `${RBAC}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: 'default' }, rules })
  const binding = await admin('POST', `${RBAC}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: 'default' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', name: 'bot', namespace: 'ops' }] })
  if (role.status !== 201 || binding.status !== 201) throw new Error(JSON.stringify([role.json, binding.json]))
}
const configMaps = { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'update', 'get', 'delete'] }

async function owner(admin: Call): Promise<{ apiVersion: string; kind: string; name: string; uid: string }> {
  const mc = await admin('POST', '/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds', { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache' }, spec: { size: 1 } })
  return { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: mc.json.metadata.uid }
}
const child = (name: string, refs: unknown[]) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: refs } })

t.test('blockOwnerDeletion needs update on the owner\'s finalizers; without it the real 403', async (t) => {
  const { admin, bot } = await bed(t)
  const ref = await owner(admin)
  await grant(admin, 'configmaps', [configMaps])
  const refused = await bot('POST', CM, child('blocking', [{ ...ref, controller: true, blockOwnerDeletion: true }]))
  t.equal(refused.status, 403)
  t.equal(refused.json.message, 'configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>')
  t.same(refused.json.details, { name: 'blocking', kind: 'configmaps' })
  t.equal((await bot('POST', CM, child('plain', [{ ...ref, controller: true }]))).status, 201, 'a reference that does not block needs nothing more')
  await grant(admin, 'finalizers', [{ apiGroups: ['cache.example.com'], resources: ['memcacheds/finalizers'], resourceNames: ['cache'], verbs: ['update'] }])
  t.equal((await bot('POST', CM, child('blocking', [{ ...ref, controller: true, blockOwnerDeletion: true }]))).status, 201, 'allowed with the rule (resourceNames: the owner)')
  const other = { ...ref, name: 'other', uid: 'other-uid' }
  t.equal((await bot('POST', CM, child('other', [{ ...other, blockOwnerDeletion: true }]))).status, 403, 'not for another owner')
})

t.test('an update that newly sets blockOwnerDeletion is checked; one that keeps it is not', async (t) => {
  const { admin, bot } = await bed(t)
  const ref = await owner(admin)
  await grant(admin, 'configmaps', [configMaps])
  const created = await admin('POST', CM, child('kept', [{ ...ref, blockOwnerDeletion: true }]))
  const kept = await bot('PUT', `${CM}/kept`, { ...created.json, data: { a: '1' } })
  t.equal(kept.status, 200, 'references unchanged: no check')
  const plain = await bot('POST', CM, child('flip', [{ ...ref }]))
  const flipped = await bot('PUT', `${CM}/flip`, { ...plain.json, metadata: { ...plain.json.metadata, ownerReferences: [{ ...ref, blockOwnerDeletion: true }] } })
  t.equal(flipped.status, 403, 'false → true is newly blocking')
})

t.test('changing ownerReferences needs delete on the object itself', async (t) => {
  const { admin, bot } = await bed(t)
  const ref = await owner(admin)
  await grant(admin, 'create-only', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }])
  const refused = await bot('POST', CM, child('mine', [{ ...ref }]))
  t.equal(refused.status, 403)
  t.equal(refused.json.message, 'configmaps "mine" is forbidden: cannot set an ownerRef on a resource you can\'t delete: , <nil>')
  t.equal((await bot('POST', CM, child('free', []))).status, 201, 'no reference, no check')
})
