/**
 * RBAC proof: the operator (`run`'s code path, with leader election) goes through the scenarios of
 * the integration suite as its own ServiceAccount, with the RBAC of kustomize/default applied and
 * enforced by the sandbox's authorizer and its OwnerReferencesPermissionEnforcement admission: a
 * request it is not allowed makes the scenario fail (and none may have been answered 403). As a
 * second check, every request recorded must be allowed by the rules, and every rule must have been
 * needed by some request or admission check; changing a rule in kustomize/rbac in either
 * direction fails this test.
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import https from 'node:https'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import YAML from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { rolloutCRD } from '../operator/api/rollout-crd.ts'
import { revisionObject } from '../operator/api/chart-revision.ts'
import { KubeConfig } from '@kubernetes/client-node'
import { KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { packageVersion } from '../operator/cli/io.ts'
import { startOperator, type Operator, type RunOptions } from '../operator/cli/run.ts'
import { chartFromFiles, loadChart, readChartFiles } from '../operator/render/chart.ts'
import { EventAggregator } from '../operator/reconcile/events.ts'
import { ApiEventRecorder } from '../operator/reconcile/recorder.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { RequestRecord } from '../operator/sandbox/accounting.ts'
import { allowing, expand, grantsFor, kustomize, ruleMatches, type Attributes, type Grant } from './deploy-manifests.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { kubectlPath } from './support/tools.ts'
import { clientFor, eventually } from './support/operator.ts'

const NS = 'memcached-operator-system'
const SA = 'memcached-operator-controller-manager'
const UA = `memcached-operator/${packageVersion()}`
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Status = { nodes?: string[]; readyReplicas?: number; observedGeneration?: number; conditions?: { type: string; reason: string }[] }
// What docs/install.md has the owner of a namespace whose Memcacheds read Secrets create: the
// input-secrets ClusterRole (installed, bound nowhere) bound to the operator there.
const INPUT_SECRETS_BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'memcached-operator-input-secrets', namespace: 'team-a' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'memcached-operator-input-secrets' }, subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }] } as unknown as KubeObject

// The bundled chart, every kind of it: ConfigMaps (the Grafana dashboard), the NetworkPolicy, the
// StatefulSet (workload.kind) and the optional kinds, whose CRDs the sandbox serves from the start
// (reduced copies of the Prometheus Operator's and cert-manager's).
const chart = loadChart()
const crds = ['servicemonitor-crd.yaml', 'prometheusrule-crd.yaml', 'certificate-crd.yaml'].map((f) => YAML.parse(readFileSync(join(import.meta.dirname, 'fixtures', f), 'utf8')) as KubeObject)

async function converged(user: KubeClient, namespace: string, name: string, size: number): Promise<void> {
  await eventually(`${namespace}/${name} at ${size}`, async () => {
    const cr = await user.get({ ...MC, namespace, name })
    const s = (cr.status ?? {}) as Status
    return s.observedGeneration === cr.metadata.generation && s.nodes?.length === size && s.readyReplicas === size ? true : undefined
  }, 30_000)
}

/** The kinds and names of what the operator applied for a CR (its children, by their instance label), sorted. */
async function names(user: KubeClient, namespace: string, instance: string): Promise<string[]> {
  const out: string[] = []
  for (const k of chart.kinds) {
    const list = await user.list({ apiVersion: k.apiVersion, kind: k.kind }, { namespace, labelSelector: `app.kubernetes.io/instance=${instance}` })
    for (const o of list.items) out.push(`${k.kind} ${o.metadata.name ?? ''}`)
  }
  return out.sort()
}

/** Waits until a CR's children are exactly `expected` (what it renders applied, the rest pruned). */
async function rendered(user: KubeClient, namespace: string, instance: string, expected: string[]): Promise<void> {
  const want = JSON.stringify([...expected].sort())
  try {
    await eventually(`${namespace}/${instance}: ${want}`, async () => (JSON.stringify(await names(user, namespace, instance)) === want ? true : undefined), 30_000)
  } catch (err) {
    // What the operator says of the CR is what explains a wait that did not end.
    const cr = await user.get({ apiVersion: MC.apiVersion, kind: MC.kind, namespace, name: instance })
    throw new Error(`${(err as Error).message}; found ${JSON.stringify(await names(user, namespace, instance))}; conditions ${JSON.stringify((cr.status as { conditions?: unknown } | undefined)?.conditions)}`)
  }
}

/** Runs the scenarios and returns what the operator's user agent asked the sandbox. */
async function recordScenarios(t: Test): Promise<RequestRecord[]> {
  // A server without watch-lists (kube-apiserver before 1.34 has its WatchList feature off by
  // default): the operator's fallback, lists in pages and then watches, needs both verbs, where a
  // watch-list needs only `watch` (a watch from no resourceVersion has always sent every object).
  const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 1_000_000, watchList: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject, chartRevisionCRD() as unknown as KubeObject, rolloutCRD() as unknown as KubeObject, ...crds] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  user.learnKinds(chart.kinds)
  for (const ns of [NS, 'team-a']) await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
  // The operator's ServiceAccount and RBAC exactly as kustomize/default installs them.
  const rbac = kustomize('default').filter((o) => o.kind === 'ServiceAccount' || o.apiVersion === 'rbac.authorization.k8s.io/v1')
  t.same(rbac.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount'])
  rbac.push(INPUT_SECRETS_BINDING)
  // Prometheus's ServiceAccount bound to the metrics reader, as metrics_reader_role.yaml says to.
  rbac.push({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'prometheus-metrics' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'memcached-operator-metrics-reader' }, subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'monitoring' }] } as unknown as KubeObject)
  await new Promise<void>((done, fail) => {
    const kubectl = execFile(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, 'apply', '--server-side', '-f', '-'], (err) => (err ? fail(err) : done()))
    kubectl.stdin!.end(rbac.map((o) => JSON.stringify(o)).join('\n'))
  })
  const asOperator = await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` })

  // As the manager Deployment runs it: all namespaces, leader election in the operator's namespace.
  const opts: RunOptions = {
    kubeconfig: asOperator,
    namespace: [],
    concurrency: '2',
    resyncPeriod: '10m',
    leaderElect: true,
    leaderElectionNamespace: NS,
    leaderElectionId: 'memcached-operator-leader',
    metricsBindAddress: '127.0.0.1:0',
    metricsSecure: true,
    healthProbeBindAddress: '127.0.0.1:0',
    rolloutPollMs: 100,
    // The scenarios prune most of a CR's objects in one step (size 1 with its features off, a
    // workload kind switched back): what they prove is the RBAC every prune needs, not the damage
    // guard that would hold them (operator-budget.test.ts holds it).
    maxPruneFraction: '1',
  }
  let current = chart
  const start = (): Promise<Operator> => startOperator(opts, captureIO(), pino({ level: 'silent' }), () => current)
  const leader = await start()
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: NS, name: 'memcached-operator-leader' }
  const holder = async () => ((await user.get(lease)).spec as { holderIdentity?: string }).holderIdentity
  await eventually('the leader holds the lease', async () => ((await holder()) === leader.elector?.identity ? true : undefined))
  // Prometheus scrapes the HTTPS metrics: a TokenReview and a SubjectAccessReview.
  t.equal(await scrapeStatus(leader.endpoints.metricsAddress!, sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' })), 200, 'the metrics reader reads the metrics')
  // The second replica: warm caches, waits for the Lease.
  const standby = await start()
  t.teardown(() => standby.stop())

  // Create: ServiceAccount, ConfigMap (the dashboard), Service, Deployment, PDB, NetworkPolicy; status; events.
  const cache = { ...MC, namespace: 'default', name: 'cache' }
  await user.create({ ...MC, metadata: { name: 'cache', namespace: 'default' }, spec: { size: 3, serviceAccount: { create: true }, metrics: { enabled: true, dashboard: { enabled: true } }, networkPolicy: { enabled: true } } })
  await converged(user, 'default', 'cache', 3)
  t.same(await names(user, 'default', 'cache'), ['ConfigMap cache-dashboard', 'Deployment cache', 'NetworkPolicy cache', 'PodDisruptionBudget cache', 'Service cache', 'ServiceAccount cache'], 'every kind but the optional ones and the StatefulSet')
  // Scale, grow the memory (in place: each pod read and resized), then roll out a new pod template.
  await user.patch(cache, { spec: { size: 4 } }, { type: 'merge' })
  await converged(user, 'default', 'cache', 4)
  const memoryOf = async () =>
    (await user.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=cache' })).items.map((p) => [p.metadata.uid, (p.spec as { containers: { resources: { limits: { memory: string } } }[] }).containers[0]!.resources.limits.memory])
  const small = await memoryOf()
  await user.patch(cache, { spec: { memoryMB: 128 } }, { type: 'merge' })
  await eventually('the pods resized in place', async () => {
    const now = await memoryOf()
    return now.length === 4 && now.every(([uid, memory]) => small.some(([u, m]) => u === uid && m !== memory)) ? true : undefined
  })
  await user.patch(cache, { spec: { podAnnotations: { rollout: '1' } } }, { type: 'merge' })
  await converged(user, 'default', 'cache', 4)
  // Prune at size 1: the PDB, and what is no longer asked for (the ServiceAccount, the dashboard's
  // ConfigMap, the NetworkPolicy) are deleted.
  await user.patch(cache, { spec: { size: 1, serviceAccount: { create: false }, metrics: { enabled: false, dashboard: { enabled: false } }, networkPolicy: { enabled: false } } }, { type: 'merge' })
  await converged(user, 'default', 'cache', 1)
  await rendered(user, 'default', 'cache', ['Deployment cache', 'Service cache'])
  // The workload becomes a StatefulSet and a Deployment again: each is pruned once the other is ready.
  await user.patch(cache, { spec: { size: 2, workload: { kind: 'StatefulSet' } } }, { type: 'merge' })
  await rendered(user, 'default', 'cache', ['PodDisruptionBudget cache', 'Service cache', 'StatefulSet cache'])
  await converged(user, 'default', 'cache', 2)
  await user.patch(cache, { spec: { size: 1, workload: { kind: 'Deployment' } } }, { type: 'merge' })
  await rendered(user, 'default', 'cache', ['Deployment cache', 'Service cache'])
  await converged(user, 'default', 'cache', 1)
  // A chart author drops templates: what a CR rendered before and no longer renders is pruned,
  // whatever its kind (here the Service and the Deployment).
  await user.patch(cache, { spec: { size: 2 } }, { type: 'merge' })
  await converged(user, 'default', 'cache', 2)
  current = loadChart(chartWith({ 'templates/service.ejs': null, 'templates/deployment.ejs': null }))
  await user.patch(cache, { spec: { size: 3 } }, { type: 'merge' })
  await rendered(user, 'default', 'cache', ['PodDisruptionBudget cache'])
  current = chart
  await user.patch(cache, { spec: { size: 2 } }, { type: 'merge' })
  await converged(user, 'default', 'cache', 2)
  // The optional kinds, served here: a ServiceMonitor, a PrometheusRule and a cert-manager
  // Certificate. Nothing issues the certificate in the sandbox, so the test writes the Secret as
  // cert-manager would (the Certificate's secretName and secretTemplate); its checksum rolls the pods.
  const monitored = { ...MC, namespace: 'team-a', name: 'monitored' }
  const addOns = ['Certificate monitored-tls', 'PrometheusRule monitored', 'ServiceMonitor monitored']
  await user.create({ ...MC, metadata: { name: 'monitored', namespace: 'team-a' }, spec: { size: 2, metrics: { enabled: true, serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } }, tls: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca', kind: 'ClusterIssuer' } } }, reload: { enabled: false } } })
  await rendered(user, 'team-a', 'monitored', [...addOns, 'Deployment monitored', 'PodDisruptionBudget monitored', 'Service monitored'])
  await converged(user, 'team-a', 'monitored', 2)
  const certificate = await user.get({ apiVersion: 'cert-manager.io/v1', kind: 'Certificate', namespace: 'team-a', name: 'monitored-tls' })
  const { secretName, secretTemplate } = certificate.spec as { secretName: string; secretTemplate: { labels: Record<string, string> } }
  t.same(secretTemplate.labels, { 'cache.example.com/memcached-input': 'true' }, 'cert-manager writes its Secret with the input label')
  const served = await user.get(monitored)
  t.match(((served.status ?? {}) as Status).conditions?.find((c) => c.type === 'OptionalKindsServed'), { reason: 'AllServed' })
  const podAnnotations = async () => ((await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'team-a', name: 'monitored' })).spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ?? {}
  t.notOk((await podAnnotations())['checksum/tls-secret'], 'no checksum before cert-manager writes the Secret')
  await user.create({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: secretName, namespace: 'team-a', labels: secretTemplate.labels }, stringData: { 'tls.crt': 'certificate', 'tls.key': 'key', 'ca.crt': 'ca' } } as KubeObject)
  await eventually('the TLS Secret\'s checksum on the pods', async () => ((await podAnnotations())['checksum/tls-secret'] ? true : undefined))
  await converged(user, 'team-a', 'monitored', 2)
  // Turned off: the prune deletes the three add-ons (cert-manager's Secret is not the operator's).
  await user.patch(monitored, { spec: { metrics: { enabled: false, serviceMonitor: { enabled: false }, prometheusRule: { enabled: false } }, tls: { enabled: false, certManager: { enabled: false } } } }, { type: 'merge' })
  await rendered(user, 'team-a', 'monitored', ['Deployment monitored', 'PodDisruptionBudget monitored', 'Service monitored'])
  await converged(user, 'team-a', 'monitored', 2)
  await user.delete(monitored)
  // Ownership conflict in another namespace: a Warning event there, no write to the foreign object,
  // which the operator does not cache (no label of its own): its create finds it, a GET reads it.
  await user.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken', namespace: 'team-a' }, spec: { ports: [{ port: 80 }] } })
  await user.create({ ...MC, metadata: { name: 'taken', namespace: 'team-a' }, spec: { size: 2 } })
  await eventually('OwnershipConflict', async () => {
    const cr = await user.get({ ...MC, namespace: 'team-a', name: 'taken' })
    return ((cr.status ?? {}) as Status).conditions?.some((c) => c.reason === 'OwnershipConflict') ? true : undefined
  })
  // A Secret input (memcached's auth file): missing (SecretNotFound, after one GET of it), then
  // created with the label.
  await user.create({ ...MC, metadata: { name: 'keyed', namespace: 'team-a' }, spec: { size: 2, auth: { enabled: true, secretName: 'keyed-auth' } } })
  await eventually('SecretNotFound', async () => {
    const cr = await user.get({ ...MC, namespace: 'team-a', name: 'keyed' })
    return ((cr.status ?? {}) as Status).conditions?.some((c) => c.reason === 'SecretNotFound') ? true : undefined
  })
  await user.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-auth', namespace: 'team-a', labels: { 'cache.example.com/memcached-input': 'true' } }, stringData: { passwords: 'user:password\n' } } as KubeObject)
  await converged(user, 'team-a', 'keyed', 2)
  await user.delete({ ...MC, namespace: 'team-a', name: 'keyed' })
  // A rollout to another revision: the leader plans the fleet (dry runs), writes spec.chartRevision
  // of the CRs (cache moves; taken, in an ownership conflict, is held), updates the Rollout's status
  // and promotes the revision at the end.
  const nextDir = chartWith({ 'values.yaml': readChartFiles(chart.dir).get('values.yaml')!.replace('podAnnotations: {}', 'podAnnotations: {revision: next}') })
  const next = revisionObject(chartFromFiles(readChartFiles(nextDir), nextDir))
  await user.create(next as unknown as KubeObject)
  await user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout', metadata: { name: 'next' }, spec: { revision: next.metadata.name, healthDeadline: '60s' } })
  await eventually('the rollout succeeds', async () => (((await user.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout', name: 'next' })).status as { phase?: string } | undefined)?.phase === 'Succeeded' ? true : undefined), 60_000)
  t.equal(((await user.get(cache)).status as { chartRevision?: string }).chartRevision, next.metadata.name, 'the rollout moved cache')
  // Delete: the garbage collector removes the children; the operator only sees them go.
  await user.delete(cache)
  await eventually('children collected', async () => ((await user.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.length === 0 ? true : undefined))

  // A repeated event after the suppression window patches the count of the existing Event. Ten
  // minutes cannot pass in a test, so the operator's recorder is driven with its clock advanced,
  // through a client with the operator's identity.
  const opKc = new KubeConfig()
  opKc.loadFromFile(asOperator)
  const opClient = new KubeClient(opKc, { userAgent: UA, fieldManager: 'memcached-operator' })
  t.teardown(() => opClient.close())
  const recorder = new ApiEventRecorder(opClient, new EventAggregator(), pino({ level: 'silent' }), () => now)
  let now = new Date()
  const cr = (await user.get({ ...MC, namespace: 'team-a', name: 'taken' })) as Parameters<ApiEventRecorder['record']>[0]
  await recorder.record(cr, 'Warning', 'OwnershipConflict', 'repeated')
  now = new Date(now.getTime() + 11 * 60_000)
  await recorder.record(cr, 'Warning', 'OwnershipConflict', 'repeated')

  // Leader hand-over: SIGTERM's path releases the Lease; the standby takes it.
  await leader.stop()
  await eventually('the standby leads', async () => ((await holder()) === standby.elector?.identity ? true : undefined), 30_000)
  await standby.stop()
  return sandbox.requests.log().filter((r) => r.userAgent === UA)
}

/** The status of an HTTPS GET of /metrics with a bearer token (the certificate is self-signed). */
function scrapeStatus(address: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port: Number(address.slice(address.lastIndexOf(':') + 1)), path: '/metrics', rejectUnauthorized: false, agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      .on('error', reject)
  })
}

const attributes = (r: RequestRecord): Attributes => ({ verb: r.verb, group: r.group, resource: r.resource, ...(r.subresource ? { subresource: r.subresource } : {}), ...(r.namespace ? { namespace: r.namespace } : {}), ...(r.name ? { name: r.name } : {}) })
const describe = (a: Attributes) => `${a.verb} ${a.group || 'core'}/${a.resource}${a.subresource ? `/${a.subresource}` : ''} ${a.namespace ? `in ${a.namespace}` : 'cluster-wide'}${a.name ? ` (${a.name})` : ''}`
const grantName = (g: Grant) => `${g.from}: ${g.rule.verbs.join(',')} ${(g.rule.apiGroups ?? []).map((x) => x || 'core').join(',')}/${(g.rule.resources ?? []).join(',')}${g.rule.resourceNames ? ` [${g.rule.resourceNames.join(',')}]` : ''}`

t.test('every request the operator makes is allowed, and every rule is needed', async (t) => {
  const records = await recordScenarios(t)
  const objects = [...kustomize('default'), INPUT_SECRETS_BINDING]
  const grants = grantsFor(objects, NS, SA)
  t.ok(grants.length > 0, 'the ServiceAccount is bound')

  // Discovery (non-resource URLs such as /api, /apis) is granted to every authenticated user by
  // the built-in system:discovery ClusterRole; the operator needs nothing more there.
  const discovery = records.filter((r) => r.resource === '')
  t.ok(discovery.every((r) => r.verb === 'get'), 'non-resource requests are discovery reads')
  t.same(records.filter((r) => r.code === 401 || r.code === 403).map((r) => `${r.code} ${describe(attributes(r))}`), [], 'the authorizer refused nothing')
  // What OwnerReferencesPermissionEnforcement asks the authorizer for each child the operator
  // creates with a blocking owner reference (the children carry their CR's name).
  const managed = new Set(chart.kinds.map((k) => k.resource))
  const admission: Attributes[] = records
    .filter((r) => (r.verb === 'create' || r.verb === 'patch') && r.code === 201 && managed.has(r.resource) && !r.subresource)
    .map((r) => ({ verb: 'update', group: 'cache.example.com', resource: 'memcacheds', subresource: 'finalizers', ...(r.namespace ? { namespace: r.namespace } : {}), ...(r.name ? { name: r.name } : {}) }))
  t.ok(admission.length > 0, 'children were created')
  // An apply that creates is authorized for `create` too (endpoints/handlers/patch.go
  // withAuthorization): the sandbox asks it inside the request, which is recorded as a patch.
  const createdByApply: Attributes[] = records.filter((r) => r.verb === 'patch' && r.code === 201 && !r.subresource).map((r) => ({ ...attributes(r), verb: 'create' }))
  t.ok(createdByApply.some((a) => managed.has(a.resource)), 'children were created by an apply')
  const requests = [...records.filter((r) => r.resource !== '').map(attributes), ...admission, ...createdByApply]
  t.ok(requests.length > 40, `${requests.length} requests recorded`)

  const denied = [...new Set(requests.filter((a) => allowing(grants, a).length === 0).map(describe))]
  t.same(denied, [], 'no request would be forbidden')

  // Each (verb, resource) of each rule, in its scope, was used by at least one request.
  const unused: string[] = []
  for (const g of grants) {
    for (const x of expand(g)) {
      const [resource, subresource] = x.resource.split('/')
      const used = requests.some((a) => a.verb === x.verb && a.group === x.group && a.resource === resource && a.subresource === subresource && allowing([g], a).length > 0)
      // A declared kind is read with a GET only when the apply that may only create finds an object
      // already there (the conflict above exercises it for Services; below, that it is the only such read).
      const onFound = x.verb === 'get' && managed.has(resource ?? '')
      if (!used && !onFound) unused.push(`${g.from}: ${x.verb} ${x.group || 'core'}/${x.resource}`)
    }
  }
  t.same(unused, [], 'no rule grants a verb the operator never used')

  // And no rule is redundant: without any one of them some request is forbidden.
  for (const g of grants) {
    const rest = grants.filter((x) => x !== g)
    t.ok(requests.some((a) => allowing(rest, a).length === 0), `needed: ${grantName(g)}`)
  }

  // The shape of what was used, as the comments in kustomize/rbac explain it.
  const used = (verb: string, group: string, resource: string, subresource?: string) => requests.filter((a) => a.verb === verb && a.group === group && a.resource === resource && a.subresource === subresource)
  t.ok(used('list', 'cache.example.com', 'memcacheds').every((a) => a.namespace === undefined), 'Memcacheds are listed across all namespaces')
  t.same(used('get', 'cache.example.com', 'memcacheds'), [], 'a Memcached is never read with a GET')
  for (const k of chart.kinds) {
    const group = k.apiVersion.includes('/') ? k.apiVersion.split('/')[0]! : ''
    for (const verb of ['list', 'watch', 'create', 'patch', 'delete']) t.ok(used(verb, group, k.resource).length > 0, `${verb} ${k.resource}`)
    t.same(used('update', group, k.resource), [], `no update ${k.resource}`)
  }
  // A GET of a child only after the apply that may only create was refused for its uid (somebody
  // else's Service), and when the rollout's plan (cli/diff.ts liveByRequest) looks for the objects
  // of that CR that its list of the operator's objects does not show (it created none of them).
  t.same([...new Set(requests.filter((a) => a.verb === 'get' && managed.has(a.resource)).map((a) => `${a.resource} ${a.namespace}/${a.name}`))].sort(), ['deployments team-a/taken', 'poddisruptionbudgets team-a/taken', 'services team-a/taken'], 'a child is read only when its create finds one already there, or a plan does not find it listed')
  t.same(records.filter((r) => r.verb === 'create' && managed.has(r.resource)).map((r) => describe(attributes(r))), [], 'no child is created with a POST')
  t.ok(used('patch', 'cache.example.com', 'memcacheds', 'status').length > 0)
  t.ok(used('list', '', 'secrets').length > 0 && [...used('list', '', 'secrets'), ...used('watch', '', 'secrets')].every((a) => a.namespace === 'team-a'), 'Secrets are listed and watched only in the namespace that bound the input-secrets ClusterRole (where CRs read them), never cluster-wide')
  t.same([...new Set(used('get', '', 'secrets').map((a) => `${a.namespace}/${a.name}`))], ['team-a/keyed-auth'], 'a Secret is read with a GET only when it is missing from the cache')
  t.same(new Set(used('create', '', 'events').map((a) => a.namespace)), new Set(['default', 'team-a']), 'events are created in the CRs\' namespaces (hence the ClusterRole)')
  t.ok(used('patch', '', 'events').length > 0)
  const leases = requests.filter((a) => a.resource === 'leases')
  t.ok(leases.length > 0 && leases.every((a) => a.namespace === NS), 'Leases only in the operator\'s namespace (hence the Role)')
  t.same([...new Set(leases.map((a) => a.verb))].sort(), ['create', 'get', 'update'])
  t.ok(used('create', 'authentication.k8s.io', 'tokenreviews').length > 0 && used('create', 'authorization.k8s.io', 'subjectaccessreviews').length > 0, 'the HTTPS metrics endpoint reviews the scraper\'s token and access')
  t.ok(used('create', 'cache.example.com', 'chartrevisions').length > 0 && used('watch', 'cache.example.com', 'chartrevisions').length > 0, 'the operator pushes its own chart as a ChartRevision and watches the revisions')
  t.ok(used('patch', 'cache.example.com', 'memcacheds').length > 0 && used('update', 'cache.example.com', 'rollouts', 'status').length > 0 && used('patch', 'cache.example.com', 'chartrevisions').length > 0, 'a rollout writes spec.chartRevision, its own status, and promotes')
})

t.test('without update on memcacheds/finalizers, OwnerReferencesPermissionEnforcement refuses every child and the CR says so', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  // kustomize/default's RBAC with that one rule taken out.
  const rbac = kustomize('default')
    .filter((o) => o.kind === 'ServiceAccount' || o.apiVersion === 'rbac.authorization.k8s.io/v1')
    .map((o) => (o.kind === 'ClusterRole' ? { ...o, rules: ((o as unknown as { rules: { resources?: string[] }[] }).rules).filter((r) => !r.resources?.includes('memcacheds/finalizers')) } : o))
  await new Promise<void>((done, fail) => {
    const kubectl = execFile(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, 'apply', '--server-side', '-f', '-'], (err) => (err ? fail(err) : done()))
    kubectl.stdin!.end(rbac.map((o) => JSON.stringify(o)).join('\n'))
  })
  const opts: RunOptions = { kubeconfig: await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` }), namespace: [], concurrency: '1', resyncPeriod: '10m', leaderElectionId: 'memcached-operator-leader', metricsBindAddress: '0', healthProbeBindAddress: '0' }
  const op = await startOperator(opts, captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => op.stop())
  await user.create({ ...MC, metadata: { name: 'cache', namespace: 'default' }, spec: { size: 1 } })
  const degraded = await eventually('Degraded', async () => {
    const cr = await user.get({ ...MC, namespace: 'default', name: 'cache' })
    return ((cr.status ?? {}) as Status).conditions?.find((c) => c.type === 'Degraded' && c.reason === 'ApplyFailed')
  })
  t.match((degraded as unknown as { message: string }).message, /is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on/)
  t.same((await user.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items, [], 'nothing was created')
})

t.test('the rules of kustomize/rbac are those of kustomize/default, without the prefix and namespace', async (t) => {
  type Rules = { kind: string; name: string; namespaced: boolean; rules: unknown }
  const shape = (objects: KubeObject[], prefix: string): Rules[] =>
    objects
      .filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')
      .map((o) => ({ kind: o.kind, name: (o.metadata.name ?? '').slice(prefix.length), namespaced: o.metadata.namespace !== undefined, rules: (o as { rules?: unknown }).rules }))
      .sort((a, b) => a.name.localeCompare(b.name))
  t.same(shape(kustomize('rbac'), ''), shape(kustomize('default'), 'memcached-operator-'))
})

t.test('the authorizer model: scope, resource names and subresources', async (t) => {
  const rule = { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['l'], verbs: ['get'] }
  t.ok(ruleMatches(rule, { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: 'x', name: 'l' }))
  t.notOk(ruleMatches(rule, { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: 'x', name: 'other' }))
  t.notOk(ruleMatches(rule, { verb: 'list', group: 'coordination.k8s.io', resource: 'leases', namespace: 'x' }))
  const status = { apiGroups: ['cache.example.com'], resources: ['memcacheds/status'], verbs: ['patch'] }
  t.ok(ruleMatches(status, { verb: 'patch', group: 'cache.example.com', resource: 'memcacheds', subresource: 'status' }))
  t.notOk(ruleMatches(status, { verb: 'patch', group: 'cache.example.com', resource: 'memcacheds' }))
  const inNs: Grant = { namespace: 'a', from: 'Role/a/r', rule: { apiGroups: [''], resources: ['events'], verbs: ['create'] } }
  t.equal(allowing([inNs], { verb: 'create', group: '', resource: 'events', namespace: 'a' }).length, 1)
  t.equal(allowing([inNs], { verb: 'create', group: '', resource: 'events', namespace: 'b' }).length, 0, 'a Role grants only in its namespace')
  t.equal(allowing([inNs], { verb: 'create', group: '', resource: 'events' }).length, 0, 'nor cluster-wide')
})
