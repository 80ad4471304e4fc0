/**
 * The sandbox authenticates and authorizes as kube-apiserver does: bearer tokens (401 otherwise),
 * ServiceAccount tokens from TokenRequest, impersonation, RBAC over Roles, ClusterRoles and their
 * bindings with the bootstrap policy, the 403 messages of the real server, and faults aimed at one user.
 */
import t, { type Test } from 'tap'
import { startSandbox, type Sandbox, type SandboxOptions } from '../operator/sandbox/index.ts'
import { eventually } from './support/operator.ts'

type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; json: any }>

async function sandbox(t: Test, opts: SandboxOptions = {}): Promise<{ sb: Sandbox; admin: Call; as: (token: string | undefined) => Call }> {
  const sb = await startSandbox({ controllers: false, ...opts })
  t.teardown(() => sb.close())
  const as = (token: string | undefined): Call => async (method, path, body, headers = {}) => {
    const h: Record<string, string> = { 'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', ...headers }
    if (token !== undefined) h['Authorization'] = `Bearer ${token}`
    const res = await fetch(sb.url + path, { method, headers: h, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    const text = await res.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: res.status, json }
  }
  return { sb, admin: as('sandbox'), as }
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1'
const role = (ns: string, name: string, rules: unknown[]) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: ns }, rules })
const bindUser = (ns: string, name: string, roleKind: string, roleName: string, user: string) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  metadata: { name, namespace: ns },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
  subjects: [{ kind: 'User', name: user }],
})

t.test('no token, or an unknown one, is 401 with the Status kube-apiserver sends', async (t) => {
  const { as } = await sandbox(t)
  const unauthorized = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }
  for (const path of ['/api/v1/namespaces/default/pods', '/apis', '/version']) {
    t.same(await as(undefined)('GET', path), { status: 401, json: unauthorized }, `no token: ${path}`)
    t.same(await as('nope')('GET', path), { status: 401, json: unauthorized }, `unknown token: ${path}`)
  }
})

t.test('the kubeconfig token is cluster-admin through system:masters', async (t) => {
  const { admin } = await sandbox(t)
  const review = await admin('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' })
  t.equal(review.status, 201)
  t.same(review.json.status.userInfo, { username: 'sandbox-admin', groups: ['system:masters', 'system:authenticated'] })
  t.equal((await admin('DELETE', '/api/v1/namespaces/default/configmaps/none')).status, 404, 'allowed, and then not found')
})

t.test('a user without bindings is forbidden, with the real message for each kind of request', async (t) => {
  const { sb, as } = await sandbox(t)
  const jane = as(sb.issueToken({ user: 'jane' }))
  const cases: [string, string, string][] = [
    ['GET', '/api/v1/namespaces/default/pods', 'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"'],
    ['GET', '/api/v1/pods', 'pods is forbidden: User "jane" cannot list resource "pods" in API group "" at the cluster scope'],
    ['GET', '/api/v1/namespaces/default/pods/p', 'pods "p" is forbidden: User "jane" cannot get resource "pods" in API group "" in the namespace "default"'],
    ['POST', '/apis/apps/v1/namespaces/default/deployments', 'deployments.apps is forbidden: User "jane" cannot create resource "deployments" in API group "apps" in the namespace "default"'],
    ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/x', 'deployments.apps "x" is forbidden: User "jane" cannot patch resource "deployments" in API group "apps" in the namespace "ns"'],
    ['PUT', '/apis/apps/v1/namespaces/default/deployments/x/status', 'deployments.apps "x" is forbidden: User "jane" cannot update resource "deployments/status" in API group "apps" in the namespace "default"'],
    ['DELETE', '/api/v1/namespaces/default/configmaps', 'configmaps is forbidden: User "jane" cannot deletecollection resource "configmaps" in API group "" in the namespace "default"'],
    ['GET', '/api/v1/namespaces/default/configmaps?watch=true', 'configmaps is forbidden: User "jane" cannot watch resource "configmaps" in API group "" in the namespace "default"'],
    ['GET', '/api/v1/namespaces/kube-system', 'namespaces "kube-system" is forbidden: User "jane" cannot get resource "namespaces" in API group "" in the namespace "kube-system"'],
    ['GET', '/logs', 'forbidden: User "jane" cannot get path "/logs"'],
  ]
  for (const [method, path, message] of cases) {
    const res = await jane(method, path, method === 'GET' || method === 'DELETE' ? undefined : {})
    t.equal(res.status, 403, `${method} ${path}`)
    t.equal(res.json.message, message)
    t.equal(res.json.reason, 'Forbidden')
  }
  const named = await jane('PATCH', '/apis/apps/v1/namespaces/ns/deployments/x', {})
  t.same(named.json.details, { name: 'x', group: 'apps', kind: 'deployments' })
  t.same((await jane('GET', '/logs')).json.details, {}, 'a path has empty details')
})

t.test('every authenticated user may discover the API, read /version and review itself (bootstrap policy)', async (t) => {
  const { sb, as } = await sandbox(t)
  const jane = as(sb.issueToken({ user: 'jane' }))
  for (const path of ['/api', '/api/v1', '/apis', '/apis/apps/v1', '/version', '/healthz', '/openapi/v3']) t.equal((await jane('GET', path)).status, 200, path)
  const ssar = await jane('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { spec: { resourceAttributes: { verb: 'list', resource: 'pods', namespace: 'default' } } })
  t.equal(ssar.status, 201)
  t.same(ssar.json.status, { allowed: false })
  const names = (await as('sandbox')('GET', `${RBAC}/clusterroles`)).json.items.map((r: any) => r.metadata.name)
  for (const name of ['cluster-admin', 'admin', 'edit', 'view', 'system:discovery', 'system:basic-user', 'system:public-info-viewer', 'system:service-account-issuer-discovery']) t.ok(names.includes(name), name)
})

t.test('a RoleBinding grants its Role in its own namespace only', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } })
  await admin('POST', `${RBAC}/namespaces/team/roles`, role('team', 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }]))
  await admin('POST', `${RBAC}/namespaces/team/rolebindings`, bindUser('team', 'jane-reads', 'Role', 'reader', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.equal((await jane('GET', '/api/v1/namespaces/team/configmaps')).status, 200)
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps')).status, 403)
  t.equal((await jane('GET', '/api/v1/configmaps')).status, 403, 'nor across namespaces')
  t.equal((await jane('POST', '/api/v1/namespaces/team/configmaps', { metadata: { name: 'x' } })).status, 403, 'nor other verbs')
})

t.test('resourceNames restrict get and update, and allow no create nor plain list', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  for (const name of ['one', 'two']) await admin('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name } })
  await admin('POST', `${RBAC}/namespaces/default/roles`, role('default', 'one', [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['one'], verbs: ['get', 'list', 'update', 'create'] }]))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'one', 'Role', 'one', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps/one')).status, 200)
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps/two')).status, 403)
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps')).status, 403, 'a list names no object')
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Done')).status, 200, 'a list by metadata.name does')
  // requestinfo.go reads the name with fields.ParseSelector and RequiresExactMatch: any term order, `==`.
  t.equal((await jane('GET', `/api/v1/namespaces/default/configmaps?fieldSelector=${encodeURIComponent('metadata.namespace=default,metadata.name==one')}`)).status, 200, 'among other terms')
  t.equal((await jane('GET', `/api/v1/namespaces/default/configmaps?fieldSelector=${encodeURIComponent('metadata.name!=two')}`)).status, 403, 'a != term names nothing')
  t.equal((await jane('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'one' } })).status, 403, 'create is not restricted by name: no rule with resourceNames allows it')
})

t.test('a subresource needs a rule naming it', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', `${RBAC}/namespaces/default/roles`, role('default', 'deploy', [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'update'] }]))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'deploy', 'Role', 'deploy', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.equal((await jane('GET', '/apis/apps/v1/namespaces/default/deployments/x')).status, 404, 'allowed, not found')
  const scale = await jane('GET', '/apis/apps/v1/namespaces/default/deployments/x/scale')
  t.equal(scale.json.message, 'deployments.apps "x" is forbidden: User "jane" cannot get resource "deployments/scale" in API group "apps" in the namespace "default"')
  await admin('PUT', `${RBAC}/namespaces/default/roles/deploy`, role('default', 'deploy', [{ apiGroups: ['apps'], resources: ['deployments', '*/scale'], verbs: ['get', 'update'] }]))
  t.equal((await jane('GET', '/apis/apps/v1/namespaces/default/deployments/x/scale')).status, 404, '*/scale names every scale subresource')
})

t.test('a ClusterRoleBinding grants cluster-wide and cluster-scoped requests; groups are subjects too', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', `${RBAC}/clusterrolebindings`, { metadata: { name: 'devs-view' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'Group', name: 'devs' }] })
  const dev = as(sb.issueToken({ user: 'bob', groups: ['devs'] }))
  t.equal((await dev('GET', '/apis/apps/v1/deployments')).status, 200, 'view lists deployments everywhere')
  t.equal((await dev('GET', '/api/v1/namespaces')).status, 200, 'and namespaces')
  t.equal((await dev('GET', '/api/v1/namespaces/default/secrets')).status, 403, 'view reads no secrets')
  t.equal((await dev('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } })).status, 403, 'view writes nothing')
  const other = as(sb.issueToken({ user: 'eve' }))
  t.equal((await other('GET', '/apis/apps/v1/deployments')).status, 403)
})

t.test('edit and admin, bound in a namespace, allow what they aggregate', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'jane-edit', 'ClusterRole', 'edit', 'jane'))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'ann-admin', 'ClusterRole', 'admin', 'ann'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  const ann = as(sb.issueToken({ user: 'ann' }))
  t.equal((await jane('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } })).status, 201)
  t.equal((await jane('GET', '/api/v1/namespaces/default/secrets')).status, 200)
  t.equal((await jane('GET', `${RBAC}/namespaces/default/roles`)).status, 403, 'edit manages no RBAC')
  t.equal((await ann('GET', `${RBAC}/namespaces/default/roles`)).status, 200, 'admin does')
})

t.test('the clusterrole-aggregation controller adds a labelled ClusterRole\'s rules to view', async (t) => {
  const { sb, admin, as } = await sandbox(t, { controllers: true })
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'jane-view', 'ClusterRole', 'view', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.equal((await jane('GET', '/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds')).status, 403)
  await admin('POST', `${RBAC}/clusterroles`, {
    metadata: { name: 'memcached-viewer', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    rules: [{ apiGroups: ['cache.example.com'], resources: ['memcacheds'], verbs: ['get', 'list', 'watch'] }],
  })
  await eventually('view aggregates the new rule', async () => ((await jane('GET', '/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds')).status === 404 ? true : undefined))
  const view = (await admin('GET', `${RBAC}/clusterroles/view`)).json
  t.ok(view.rules.some((r: any) => r.apiGroups[0] === 'cache.example.com'))
  t.ok(view.metadata.managedFields.some((m: any) => m.manager === 'clusterrole-aggregation-controller'))
  t.ok((await admin('GET', `${RBAC}/clusterroles/admin`)).json.rules.some((r: any) => r.apiGroups[0] === 'cache.example.com'), 'and through edit, to admin')
})

t.test('a ServiceAccount token authenticates as the ServiceAccount until the ServiceAccount is deleted', async (t) => {
  const { admin, as } = await sandbox(t)
  await admin('POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'bot' } })
  const req = await admin('POST', '/api/v1/namespaces/default/serviceaccounts/bot/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } })
  t.equal(req.status, 201)
  t.match(req.json, { kind: 'TokenRequest', metadata: { name: 'bot', namespace: 'default' }, spec: { audiences: ['https://kubernetes.default.svc.cluster.local'], expirationSeconds: 600 } })
  const bot = as(req.json.status.token)
  const who = await bot('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {})
  t.match(who.json.status.userInfo, { username: 'system:serviceaccount:default:bot', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'] })
  t.equal((await bot('GET', '/api/v1/namespaces/default/pods')).json.message, 'pods is forbidden: User "system:serviceaccount:default:bot" cannot list resource "pods" in API group "" in the namespace "default"')
  await admin('DELETE', '/api/v1/namespaces/default/serviceaccounts/bot')
  t.equal((await bot('GET', '/api')).status, 401)
  await admin('POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'bot' } })
  t.equal((await bot('GET', '/api')).status, 401, 'nor for a new ServiceAccount of the same name')
  t.equal((await admin('POST', '/api/v1/namespaces/default/serviceaccounts/none/token', {})).status, 404)
  const short = await admin('POST', '/api/v1/namespaces/default/serviceaccounts/bot/token', { spec: { expirationSeconds: 10 } })
  t.equal(short.json.message, 'TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid value: 10: may not specify a duration less than 10 minutes')
})

t.test('impersonation is authorized with the impersonate verb', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  const who = async (call: Call, headers: Record<string, string>) => (await call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {}, headers)).json
  t.same((await who(admin, { 'Impersonate-User': 'jane', 'Impersonate-Group': 'devs' })).status.userInfo, { username: 'jane', groups: ['devs', 'system:authenticated'] }, 'system:masters may impersonate anyone')
  t.same((await who(admin, { 'Impersonate-User': 'system:serviceaccount:default:bot' })).status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'])
  const jane = as(sb.issueToken({ user: 'jane' }))
  const denied = await who(jane, { 'Impersonate-User': 'bob' })
  t.equal(denied.message, 'users "bob" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the cluster scope')
  await admin('POST', `${RBAC}/clusterroles`, { metadata: { name: 'impersonate-bob' }, rules: [{ apiGroups: [''], resources: ['users'], resourceNames: ['bob'], verbs: ['impersonate'] }] })
  await admin('POST', `${RBAC}/clusterrolebindings`, { metadata: { name: 'jane-as-bob' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'impersonate-bob' }, subjects: [{ kind: 'User', name: 'jane' }] })
  t.equal((await who(jane, { 'Impersonate-User': 'bob' })).status.userInfo.username, 'bob')
  t.equal((await who(jane, { 'Impersonate-User': 'bob', 'Impersonate-Group': 'system:masters' })).message, 'groups "system:masters" is forbidden: User "jane" cannot impersonate resource "groups" in API group "" at the cluster scope')
  t.equal((await who(jane, { 'Impersonate-User': 'system:serviceaccount:default:bot' })).message, 'serviceaccounts "bot" is forbidden: User "jane" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"')
})

t.test('a permission revoked at run time is refused on the next request', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', `${RBAC}/namespaces/default/roles`, role('default', 'cm', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'create'] }]))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'cm', 'Role', 'cm', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps')).status, 200)
  await admin('PATCH', `${RBAC}/namespaces/default/roles/cm`, { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }] })
  t.equal((await jane('GET', '/api/v1/namespaces/default/configmaps')).status, 403)
  await admin('DELETE', `${RBAC}/namespaces/default/roles/cm`)
  const gone = await jane('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } })
  t.equal(gone.json.message, 'configmaps is forbidden: User "jane" cannot create resource "configmaps" in API group "" in the namespace "default": RBAC: role.rbac.authorization.k8s.io "cm" not found', 'a binding to a missing role is the reason')
})

t.test('SubjectAccessReview and LocalSubjectAccessReview answer for another user', async (t) => {
  const { admin } = await sandbox(t)
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'jane-view', 'ClusterRole', 'view', 'jane'))
  const sar = await admin('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'jane', resourceAttributes: { namespace: 'default', verb: 'list', group: 'apps', resource: 'deployments' } } })
  t.same(sar.json.status, { allowed: true, reason: 'RBAC: allowed by RoleBinding "jane-view/default" of ClusterRole "view" to User "jane"' })
  const local = await admin('POST', '/apis/authorization.k8s.io/v1/namespaces/kube-system/localsubjectaccessreviews', { spec: { user: 'jane', resourceAttributes: { namespace: 'kube-system', verb: 'list', group: 'apps', resource: 'deployments' } } })
  t.same(local.json.status, { allowed: false })
  const noUser = await admin('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { resourceAttributes: { verb: 'get', resource: 'pods' } } })
  t.equal(noUser.status, 422)
  t.equal(noUser.json.message, 'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified')
})

t.test('faults restricted to a user hit only that user', async (t) => {
  const { sb, admin, as } = await sandbox(t, { faults: 'error-rate=1,users=jane' })
  await admin('POST', `${RBAC}/clusterrolebindings`, { metadata: { name: 'jane-view' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'User', name: 'jane' }] })
  const jane = as(sb.issueToken({ user: 'jane' }))
  t.ok((await jane('GET', '/api/v1/namespaces/default/configmaps')).status >= 500)
  t.equal((await admin('GET', '/api/v1/namespaces/default/configmaps')).status, 200)
  t.same(sb.faults.get().users, ['jane'])
})

t.test('with anonymous requests enabled, no token is system:anonymous, allowed only the public paths', async (t) => {
  const { as } = await sandbox(t, { anonymous: true })
  const anon = as(undefined)
  t.equal((await anon('GET', '/version')).status, 200)
  t.equal((await anon('GET', '/healthz')).status, 200)
  t.equal((await anon('GET', '/api')).json.message, 'forbidden: User "system:anonymous" cannot get path "/api"')
  t.equal((await as('nope')('GET', '/version')).status, 401, 'a bad token is still 401')
})

t.test('an apply that creates needs create as well as patch (endpoints/handlers/patch.go withAuthorization(…, createAuthorizerAttributes)); one that updates needs patch only', async (t) => {
  const { sb, admin, as } = await sandbox(t)
  await admin('POST', `${RBAC}/namespaces/default/roles`, role('default', 'patcher', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['patch'] }]))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'patcher', 'Role', 'patcher', 'jane'))
  const jane = as(sb.issueToken({ user: 'jane' }))
  const apply = { 'Content-Type': 'application/apply-patch+yaml' }
  const cm = (name: string, v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } })
  const refused = await jane('PATCH', '/api/v1/namespaces/default/configmaps/x?fieldManager=jane', cm('x', '1'), apply)
  t.equal(refused.status, 403, JSON.stringify(refused.json))
  t.equal(refused.json.message, 'configmaps "x" is forbidden: ')
  t.same(refused.json.details, { name: 'x', kind: 'configmaps' })
  t.equal((await admin('GET', '/api/v1/namespaces/default/configmaps/x')).status, 404, 'nothing created')
  await admin('POST', '/api/v1/namespaces/default/configmaps', cm('y', '0'))
  const updated = await jane('PATCH', '/api/v1/namespaces/default/configmaps/y?fieldManager=jane&force=true', cm('y', '1'), apply)
  t.equal(updated.status, 200, JSON.stringify(updated.json))
  t.equal(updated.json.data.v, '1')
  await admin('POST', `${RBAC}/namespaces/default/roles`, role('default', 'creator', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]))
  await admin('POST', `${RBAC}/namespaces/default/rolebindings`, bindUser('default', 'creator', 'Role', 'creator', 'jane'))
  t.equal((await jane('PATCH', '/api/v1/namespaces/default/configmaps/x?fieldManager=jane', cm('x', '1'), apply)).status, 201, 'with create, it creates')
})
