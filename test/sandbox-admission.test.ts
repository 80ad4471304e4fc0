/**
 * The admission plugins operators trip on, as kube-apiserver 1.34 runs them: NamespaceLifecycle,
 * PodSecurity (k8s.io/pod-security-admission) and ResourceQuota, with their codes and messages;
 * and what kube-controller-manager shows when admission refuses a ReplicaSet's pods.
 */
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createCluster, startSandbox } from '../operator/sandbox/index.ts'
import type { Cluster } from '../operator/sandbox/cluster.ts'
import { call, configMap, deployment, type Result } from './support/sandbox-requests.ts'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'
import { kubectlPath } from './support/tools.ts'

const NS = '/api/v1/namespaces'

function namespace(c: Cluster, name: string, labels: Record<string, string> = {}): void {
  const r = call(c, `POST ${NS}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } })
  if (r.status !== 201) throw new Error(JSON.stringify(r.body))
}

function pod(name: string, containers: Record<string, unknown>[] = [{ name: 'c', image: 'memcached:1.6' }], spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers, ...spec } }
}

/** A container that passes the restricted level. */
const restrictedContainer = {
  name: 'c',
  image: 'memcached:1.6',
  securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
}

function forbidden(t: Test, r: Result, message: string): void {
  t.equal(r.status, 403, JSON.stringify(r.body))
  t.equal(r.body.reason, 'Forbidden')
  t.equal(r.body.message, message)
}

// ---------------------------------------------------------------- NamespaceLifecycle

t.test('NamespaceLifecycle: a create or apply into a namespace that does not exist is 404 namespaces "x" not found (apiserver admission/plugin/namespace/lifecycle)', async (t) => {
  const c = createCluster()
  const r = call(c, 'POST /api/v1/namespaces/nowhere/configmaps', configMap('a'))
  t.equal(r.status, 404)
  t.same(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'namespaces "nowhere" not found', reason: 'NotFound', details: { name: 'nowhere', kind: 'namespaces' }, code: 404 })
  t.equal(call(c, 'PATCH /apis/apps/v1/namespaces/nowhere/deployments/d?fieldManager=m', deployment('d'), { type: 'apply' }).body.message, 'namespaces "nowhere" not found')
})

t.test('NamespaceLifecycle: a namespace held by a finalizer is Terminating, emptied, and refuses creates with 403 and a NamespaceTerminating cause', async (t) => {
  const c = createCluster()
  call(c, `POST ${NS}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'old', finalizers: ['example.com/hold'] } })
  call(c, 'POST /api/v1/namespaces/old/configmaps', configMap('before'))
  const del = call(c, `DELETE ${NS}/old`)
  t.equal(del.status, 200)
  t.equal(del.body.status.phase, 'Terminating')
  t.same(del.body.spec.finalizers, [])
  t.same(call(c, 'GET /api/v1/namespaces/old/configmaps').body.items, [], 'the namespace controller deleted its contents')
  const r = call(c, 'POST /api/v1/namespaces/old/configmaps', configMap('after'))
  forbidden(t, r, 'configmaps "after" is forbidden: unable to create new content in namespace old because it is being terminated')
  t.same(r.body.details, { name: 'after', kind: 'configmaps', causes: [{ reason: 'NamespaceTerminating', message: 'namespace old is being terminated', field: 'metadata.namespace' }] })
  const gen = call(c, 'POST /api/v1/namespaces/old/pods', { ...pod(''), metadata: { generateName: 'web-' } })
  t.equal(gen.body.message, 'pods "web-" is forbidden: unable to create new content in namespace old because it is being terminated', 'named by generateName: the plugin runs before the name is generated')
  t.equal(call(c, `PATCH ${NS}/old`, { metadata: { finalizers: null } }).status, 200)
  t.equal(call(c, `GET ${NS}/old`).status, 404, 'gone once its finalizers are removed')
})

// ---------------------------------------------------------------- PodSecurity

t.test('PodSecurity restricted: a bare pod is 403 with every failed check, in the check registry order (pod-security-admission policy/check_*.go)', async (t) => {
  const c = createCluster()
  namespace(c, 'secure', { 'pod-security.kubernetes.io/enforce': 'restricted' })
  const r = call(c, 'POST /api/v1/namespaces/secure/pods', pod('p'))
  forbidden(t, r, 'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
  t.same(r.body.details, { name: 'p', kind: 'pods' })
  t.equal(call(c, 'POST /api/v1/namespaces/secure/pods', pod('ok', [restrictedContainer])).status, 201)
  const several = call(c, 'POST /api/v1/namespaces/secure/pods', pod('two', [{ ...restrictedContainer, name: 'a', securityContext: { ...restrictedContainer.securityContext, runAsNonRoot: false, capabilities: { drop: ['ALL'], add: ['NET_ADMIN', 'NET_BIND_SERVICE'] } } }, { name: 'b', image: 'x', securityContext: { ...restrictedContainer.securityContext, runAsUser: 0 } }], { securityContext: { runAsNonRoot: true }, volumes: [{ name: 'h', hostPath: { path: '/' } }] }))
  forbidden(t, several, 'pods "two" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "a" must not include "NET_ADMIN" in securityContext.capabilities.add), restricted volume types (volume "h" uses restricted volume type "hostPath"), runAsNonRoot != true (container "a" must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "b" must not set runAsUser=0)')
})

t.test('PodSecurity baseline with enforce-version: privileged, host namespaces and host ports are refused (check_privileged.go, check_hostNamespaces.go, check_hostPorts.go)', async (t) => {
  const c = createCluster()
  namespace(c, 'base', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/enforce-version': 'v1.30' })
  t.equal(call(c, 'POST /api/v1/namespaces/base/pods', pod('plain')).status, 201, 'baseline allows an unhardened pod')
  const r = call(c, 'POST /api/v1/namespaces/base/pods', pod('p', [{ name: 'c', image: 'x', securityContext: { privileged: true }, ports: [{ containerPort: 80, hostPort: 8080 }] }], { hostNetwork: true }))
  forbidden(t, r, 'pods "p" is forbidden: violates PodSecurity "baseline:v1.30": host namespaces (hostNetwork=true), hostPort (container "c" uses hostPort 8080), privileged (container "c" must not set securityContext.privileged=true)')
})

t.test('PodSecurity warn: a Warning header on pods and workloads; a Deployment under enforce=restricted is admitted with a warning, not refused (admission.go ValidatePodController)', async (t) => {
  const c = createCluster()
  namespace(c, 'w', { 'pod-security.kubernetes.io/warn': 'restricted' })
  const p = call(c, 'POST /api/v1/namespaces/w/pods', pod('p', [{ ...restrictedContainer, securityContext: { ...restrictedContainer.securityContext, allowPrivilegeEscalation: true } }]))
  t.equal(p.status, 201)
  t.equal(p.headers.Warning, '299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false (container \\"c\\" must set securityContext.allowPrivilegeEscalation=false)"')
  namespace(c, 'e', { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/audit': 'restricted' })
  const d = call(c, 'POST /apis/apps/v1/namespaces/e/deployments', deployment('d'))
  t.equal(d.status, 201, 'workloads are never refused')
  t.match(d.headers.Warning, /^299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false \(container \\"app\\" must set/, 'warn defaults to the stricter enforce level')
  t.equal(call(c, 'POST /apis/apps/v1/namespaces/e/deployments/d/scale', {}).status, 405)
})

t.test('PodSecurity labels are validated on namespaces: 422 with the label path (api/helpers.go PolicyToEvaluate)', async (t) => {
  const c = createCluster()
  const r = call(c, `POST ${NS}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x', labels: { 'pod-security.kubernetes.io/enforce': 'strict', 'pod-security.kubernetes.io/warn-version': '1.30' } } })
  t.equal(r.status, 422)
  t.equal(r.body.message, 'Namespace "x" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"]')
})

t.test('PodSecurity: a pod update is evaluated only when an image changes (admission.go isSignificantPodUpdate)', async (t) => {
  const c = createCluster()
  namespace(c, 'n')
  t.equal(call(c, 'POST /api/v1/namespaces/n/pods', pod('p')).status, 201)
  t.equal(call(c, `PATCH ${NS}/n`, { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }).status, 200)
  t.equal(call(c, 'PATCH /api/v1/namespaces/n/pods/p', { metadata: { labels: { a: 'b' } } }).status, 200)
  t.equal(call(c, 'PATCH /api/v1/namespaces/n/pods/p', { spec: { containers: [{ name: 'c', image: 'memcached:1.7' }] } }).status, 403)
})

// ---------------------------------------------------------------- ResourceQuota

function quota(name: string, hard: Record<string, string>): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name }, spec: { hard } }
}

t.test('ResourceQuota: status.used kept by the quota controller; a pod over the count is 403 "exceeded quota" (plugin/pkg/admission/resourcequota/controller.go)', async (t) => {
  const c = createCluster()
  namespace(c, 'q')
  t.equal(call(c, 'POST /api/v1/namespaces/q/resourcequotas', quota('q', { pods: '2', 'count/configmaps': '1' })).status, 201)
  t.same(call(c, 'GET /api/v1/namespaces/q/resourcequotas/q').body.status, { hard: { 'count/configmaps': '1', pods: '2' }, used: { 'count/configmaps': '0', pods: '0' } })
  for (const n of ['a', 'b']) t.equal(call(c, 'POST /api/v1/namespaces/q/pods', pod(n)).status, 201)
  const r = call(c, 'POST /api/v1/namespaces/q/pods', pod('c'))
  forbidden(t, r, 'pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2')
  t.same(r.body.details, { name: 'c', kind: 'pods' })
  call(c, 'DELETE /api/v1/namespaces/q/pods/a')
  t.equal(call(c, 'GET /api/v1/namespaces/q/resourcequotas/q').body.status.used.pods, '1', 'usage recalculated after a delete')
  t.equal(call(c, 'POST /api/v1/namespaces/q/pods', pod('c')).status, 201)
  t.equal(call(c, 'POST /api/v1/namespaces/q/configmaps', configMap('one')).status, 201)
  t.equal(call(c, 'POST /api/v1/namespaces/q/configmaps', configMap('two')).body.message, 'configmaps "two" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1')
})

t.test('ResourceQuota on compute resources: each container must name them ("failed quota: q: must specify …"); requests and limits are summed (pkg/quota/v1/evaluator/core/pods.go)', async (t) => {
  const c = createCluster()
  namespace(c, 'q')
  call(c, 'POST /api/v1/namespaces/q/resourcequotas', quota('compute', { 'requests.cpu': '1', 'limits.memory': '256Mi', memory: '1Gi' }))
  forbidden(t, call(c, 'POST /api/v1/namespaces/q/pods', pod('p')), 'pods "p" is forbidden: failed quota: compute: must specify limits.memory,memory,requests.cpu')
  const sized = (name: string, memory: string) => pod(name, [{ name: 'c', image: 'x', resources: { requests: { cpu: '500m', memory: '64Mi' }, limits: { memory } } }])
  t.equal(call(c, 'POST /api/v1/namespaces/q/pods', sized('a', '128Mi')).status, 201)
  t.same(call(c, 'GET /api/v1/namespaces/q/resourcequotas/compute').body.status.used, { 'limits.memory': '128Mi', memory: '64Mi', 'requests.cpu': '500m' })
  forbidden(t, call(c, 'POST /api/v1/namespaces/q/pods', sized('b', '192Mi')), 'pods "b" is forbidden: exceeded quota: compute, requested: limits.memory=192Mi, used: limits.memory=128Mi, limited: limits.memory=256Mi')
  t.equal(call(c, 'POST /api/v1/namespaces/q/resourcequotas', quota('bad', { widgets: '1', pods: '-1' })).body.message, 'ResourceQuota "bad" is invalid: [spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0, spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota]')
})

// ---------------------------------------------------------------- the controllers

t.test('pods refused by admission: ReplicaSet and Deployment get ReplicaFailure (FailedCreate, the server message) and a FailedCreate Warning Event; cleared once pods are created (replica_set.go, deployment progress.go)', async (t) => {
  const { call: req, get, list } = await controllersBed(t, { podReadyDelayMs: 20, resyncMs: 200 })
  await req({ verb: 'create', resource: 'namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } })
  const d = deployment('web')
  d.metadata.namespace = 'psa'
  t.equal((await req({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'psa', body: d })).status, 201)
  const rs = await until('ReplicaFailure on the ReplicaSet', async () => (await list('replicasets', 'apps', 'psa')).find((r) => r.status?.conditions?.some((c: Obj) => c.type === 'ReplicaFailure')))
  const cond = rs.status.conditions.find((c: Obj) => c.type === 'ReplicaFailure')
  t.match(cond, { type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', lastTransitionTime: /Z$/ })
  t.match(cond.message, new RegExp(`^pods "${rs.metadata.name}-[a-z0-9]{5}" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`))
  const dep = await until('ReplicaFailure on the Deployment', async () => {
    const o = await get('deployments', 'web', 'apps', 'psa')
    return o?.status?.conditions?.find((c: Obj) => c.type === 'ReplicaFailure') ? o : undefined
  })
  t.match(dep.status.conditions.find((c: Obj) => c.type === 'ReplicaFailure'), { status: 'True', reason: 'FailedCreate', message: cond.message, lastUpdateTime: cond.lastTransitionTime, lastTransitionTime: cond.lastTransitionTime })
  const events = await until('a FailedCreate event', async () => (await list('events', '', 'psa')).filter((e) => e.reason === 'FailedCreate'))
  t.match(events[0], { type: 'Warning', involvedObject: { kind: 'ReplicaSet', name: rs.metadata.name }, message: /^Error creating: pods ".*" is forbidden: violates PodSecurity/ })
  await req({ verb: 'patch', resource: 'namespaces', name: 'psa', contentType: 'application/merge-patch+json', body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } } })
  await until('the failure cleared', async () => {
    const o = await get('deployments', 'web', 'apps', 'psa')
    return o?.status?.availableReplicas === 1 && !o.status.conditions.some((c: Obj) => c.type === 'ReplicaFailure')
  })
  t.notOk((await list('replicasets', 'apps', 'psa'))[0]?.status.conditions?.some((c: Obj) => c.type === 'ReplicaFailure'))
})

t.test('kubectl prints an admission refusal as "Error from server (Forbidden): …" and a PodSecurity warning as "Warning: …"', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kubectl = async (args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    run.child.stdin?.end(input)
    try {
      const { stdout, stderr } = await run
      return { code: 0, stdout, stderr }
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string }
      return { code: err.code, stdout: err.stdout, stderr: err.stderr }
    }
  }
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'locked', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }
  t.equal((await kubectl(['create', '-f', '-'], JSON.stringify(ns))).code, 0)
  const refused = await kubectl(['create', '-n', 'locked', '-f', '-'], JSON.stringify(pod('p')))
  t.equal(refused.code, 1)
  t.equal(refused.stderr.trim(), 'Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
  const warned = await kubectl(['create', '-n', 'locked', '-f', '-'], JSON.stringify({ ...deployment('d'), metadata: { name: 'd' } }))
  t.equal(warned.code, 0)
  t.match(warned.stderr, /^Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "app" must set securityContext.allowPrivilegeEscalation=false\)/)
  t.match(warned.stdout, 'deployment.apps/d created')
  const missing = await kubectl(['create', '-n', 'nowhere', '-f', '-'], JSON.stringify(configMap('x')))
  t.equal(missing.stderr.trim(), 'Error from server (NotFound): error when creating "STDIN": namespaces "nowhere" not found')
})
