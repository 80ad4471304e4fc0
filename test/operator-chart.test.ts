/**
 * The bundled chart (charts/memcached) end to end: the operator, in-process against the sandbox,
 * reconciles CRs that use its production features — a StatefulSet behind the headless Service and
 * its stable server names, a switch of workload kind without downtime, TLS and auth from labelled
 * Secrets whose rotation rolls the pods (and TLS from a cert-manager Certificate, an optional kind),
 * the exporter with the optional ServiceMonitor and PrometheusRule once their CRDs are served, the
 * NetworkPolicy, the production sample through real kubectl, and the rules between values that
 * make a CR InvalidSpec with nothing applied. The optional kinds' CRDs are reduced fixtures
 * (test/fixtures/*-crd.yaml), installed while the operator runs.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { secretChecksum } from '../operator/render/secrets.ts'
import { crdBeforeRules } from './support/crd-before-rules.ts'
import { kubectlFor } from './support/kubectl.ts'
import { isReady, observe } from './support/observe.ts'
import { eventually, findObject, operatorWrites, startBed, type Bed } from './support/operator.ts'

const chart = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const LABEL = { 'cache.example.com/memcached-input': 'true' }
const SELECTOR = (name: string) => ({ 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': name })
type Condition = { type: string; status: string; reason: string; message: string }
type Status = { nodes?: string[]; serverList?: string[]; servers?: number; readyReplicas?: number; observedGeneration?: number; conditions?: Condition[] }
type PodTemplate = { metadata: { annotations?: Record<string, string> }; spec: { containers: { name: string; args?: string[]; ports?: { name: string; containerPort: number }[] }[]; volumes?: { name: string; secret?: { secretName: string } }[] } }
const statusOf = (o: KubeObject) => (o.status ?? {}) as Status
const condition = (o: KubeObject, type: string) => statusOf(o).conditions?.find((c) => c.type === type)
const templateOf = (workload: KubeObject) => (workload.spec as { template: PodTemplate }).template
const cr = (name: string, spec: Record<string, unknown>) => ({ ...MC, metadata: { name, namespace: 'default' }, spec })
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const patchMc = (c: KubeClient, name: string, spec: Record<string, unknown>) => c.patch({ ...MC, namespace: 'default', name }, { spec }, { type: 'merge' })
const pods = async (c: KubeClient, name: string) =>
  (await c.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })).items.filter((p) => !p.metadata.deletionTimestamp)

/** Waits until the CR is Ready for its current generation with `size` servers ready. */
function converged(c: KubeClient, name: string, size: number, timeoutMs?: number): Promise<KubeObject> {
  return eventually(
    `${name} Ready with ${size} servers`,
    async () => {
      const o = await getMc(c, name)
      const s = statusOf(o)
      return s.observedGeneration === o.metadata.generation && condition(o, 'Ready')?.status === 'True' && s.servers === size && s.readyReplicas === size ? o : undefined
    },
    timeoutMs,
  )
}

/** Waits until the CR's Degraded condition is True with `reason` for its current generation. */
function degraded(c: KubeClient, name: string, reason: string): Promise<Condition> {
  return eventually(`${name} Degraded ${reason}`, async () => {
    const o = await getMc(c, name)
    const d = condition(o, 'Degraded')
    return d?.status === 'True' && d.reason === reason && statusOf(o).observedGeneration === o.metadata.generation ? d : undefined
  })
}

/** The operator's writes of the objects of instance `name` (named `name` or `name-…`), other than Events and the CR's status. */
const objectWrites = (bed: Bed, name: string) => operatorWrites(bed.sandbox).filter((w) => w.resource !== 'events' && !w.subresource && (w.name === name || w.name?.startsWith(`${name}-`)))

const crdFixture = (file: string) => YAML.parse(readFileSync(resolve(import.meta.dirname, 'fixtures', file), 'utf8')) as KubeObject

/** Creates a CRD and waits until discovery lists its resource. */
async function installCrd(c: KubeClient, object: KubeObject): Promise<void> {
  const res = await c.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: object })
  if (res.status !== 201) throw new Error(`CRD not created: ${res.status} ${res.body}`)
  const spec = object.spec as { group: string; names: { plural: string }; versions: { name: string }[] }
  await eventually(`${spec.names.plural}.${spec.group} served`, async () => {
    const gv = await c.request({ method: 'GET', path: `/apis/${spec.group}/${spec.versions[0]!.name}` })
    return gv.status === 200 && (JSON.parse(gv.body) as { resources: { name: string }[] }).resources.some((r) => r.name === spec.names.plural) ? true : undefined
  })
}
const installMonitoringCrds = async (c: KubeClient) => {
  await installCrd(c, crdFixture('servicemonitor-crd.yaml'))
  await installCrd(c, crdFixture('prometheusrule-crd.yaml'))
}

t.test('a StatefulSet CR converges behind the headless Service: stable server names, EndpointSlice hostnames, kubectl get mc SERVERS', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create(cr('cache', { size: 3, workload: { kind: 'StatefulSet' } }))
  const o = await converged(bed.client, 'cache', 3)
  t.same(statusOf(o).serverList, ['cache-0.cache.default.svc:11211', 'cache-1.cache.default.svc:11211', 'cache-2.cache.default.svc:11211'])
  t.equal(statusOf(o).servers, 3)
  t.same(statusOf(o).nodes, ['cache-0', 'cache-1', 'cache-2'], 'nodes are the pod names')

  const sts = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'cache' })
  const svc = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'cache' })
  const stsSpec = sts.spec as { serviceName: string; podManagementPolicy: string; replicas: number }
  const svcSpec = svc.spec as { clusterIP: string; publishNotReadyAddresses?: boolean; ports: { name: string; port: number }[] }
  t.equal(stsSpec.serviceName, svc.metadata.name, "the StatefulSet's serviceName is the chart's Service")
  t.equal(svcSpec.clusterIP, 'None', 'which is headless')
  t.equal(svcSpec.publishNotReadyAddresses, true, 'and publishes the pods before they are ready')
  t.equal(stsSpec.podManagementPolicy, 'Parallel')
  t.same(svcSpec.ports.map((p) => [p.name, p.port]), [['memcache', 11211]], 'no metrics port without metrics')
  t.notOk(await findObject(bed.client, 'apps/v1', 'Deployment', 'cache'), 'no Deployment')
  for (const kind of ['StatefulSet', 'Service']) {
    const live = kind === 'Service' ? svc : sts
    t.same(live.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]), [['Memcached', 'cache', o.metadata.uid, true]], `the ${kind} is owned by the CR`)
  }

  bed.client.learnKinds([{ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', resource: 'endpointslices' }])
  const slices = await bed.client.list({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' }, { namespace: 'default', labelSelector: 'kubernetes.io/service-name=cache' })
  type Endpoint = { hostname?: string; addresses: string[]; conditions: { ready?: boolean }; targetRef?: { kind: string; name: string } }
  const endpoints = slices.items.flatMap((s) => (s as { endpoints?: Endpoint[] }).endpoints ?? []).sort((a, b) => String(a.hostname).localeCompare(String(b.hostname)))
  t.same(
    endpoints.map((e) => [e.hostname, e.targetRef?.kind, e.targetRef?.name, e.conditions.ready]),
    [0, 1, 2].map((i) => [`cache-${i}`, 'Pod', `cache-${i}`, true]),
    'the EndpointSlice lists every pod with its hostname (what cluster DNS serves <pod>.<service> from)',
  )
  const podIPs = new Map((await pods(bed.client, 'cache')).map((p) => [p.metadata.name, (p.status as { podIP: string }).podIP]))
  t.same(endpoints.map((e) => e.addresses), [0, 1, 2].map((i) => [podIPs.get(`cache-${i}`)]), "each endpoint is its pod's IP")

  const kubectl = kubectlFor(bed.sandbox.kubeconfigPath)
  t.match(await kubectl(['get', 'mc', 'cache']), /^NAME\s+SIZE\s+READY\s+SERVERS\s+STATUS\s+AGE\ncache\s+3\s+3\s+3\s+Reconciled\s/, 'the SERVERS column')
  t.equal(await kubectl(['get', 'mc', 'cache', '-o', 'jsonpath={.status.serverList}']), JSON.stringify(statusOf(o).serverList), 'what a client reads')
})

t.test('switching a live CR from a StatefulSet to a Deployment and back keeps a ready pod and a ready endpoint at every moment', async (t) => {
  // Pods take a while to become ready, so that each new workload is seen not ready for a while.
  const bed = await startBed({ chart, sandbox: { podReadyDelayMs: 300 } })
  t.teardown(() => bed.stop())
  await bed.client.create(cr('flip', { size: 2, workload: { kind: 'StatefulSet' } }))
  await converged(bed.client, 'flip', 2)
  const seen = await observe(bed, 'flip')
  t.teardown(seen.stop)

  for (const [from, to] of [['StatefulSet', 'Deployment'], ['Deployment', 'StatefulSet']] as const) {
    await patchMc(bed.client, 'flip', { workload: { kind: to } })
    await eventually(`the ${from} pruned`, async () => ((await findObject(bed.client, 'apps/v1', from, 'flip')) ? undefined : true), 30_000)
    await converged(bed.client, 'flip', 2)
    await eventually(`only the ${to}'s pods left`, async () => {
      const left = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=flip' })
      return left.items.length === 2 && left.items.every((p) => p.metadata.ownerReferences?.[0]?.kind === (to === 'StatefulSet' ? 'StatefulSet' : 'ReplicaSet') && isReady(p)) ? true : undefined
    })
    t.ok(await findObject(bed.client, 'apps/v1', to, 'flip'), `the ${to} runs`)
    const svc = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'flip' })
    t.equal((svc.spec as { publishNotReadyAddresses?: boolean }).publishNotReadyAddresses, to === 'StatefulSet' ? true : undefined, `publishNotReadyAddresses follows the ${to}`)
  }
  seen.stop()
  const back = await converged(bed.client, 'flip', 2)
  t.same(statusOf(back).serverList, ['flip-0.flip.default.svc:11211', 'flip-1.flip.default.svc:11211'], 'the stable names again')
  t.ok(seen.readyPods.length > 6, `pod events observed (${seen.readyPods.length})`)
  t.notOk(seen.readyPods.includes(0), `at least one ready pod after every pod event (fewest: ${Math.min(...seen.readyPods)})`)
  t.ok(seen.readyEndpoints.length > 2, `EndpointSlice events observed (${seen.readyEndpoints.length})`)
  t.notOk(seen.readyEndpoints.includes(0), `the Service had a ready endpoint after every EndpointSlice event (fewest: ${Math.min(...seen.readyEndpoints)})`)
  t.same(seen.stolen, [], "no workload took the other's pods")
  t.ok([...seen.progressing].some((p) => p.startsWith('SwitchingWorkload: ')), 'Progressing said what the prune waited for')
})

const SECRET_CASES = [
  {
    what: 'TLS',
    annotation: 'checksum/tls-secret',
    spec: { tls: { enabled: true, secretName: 'cache-tls' }, reload: { enabled: false } },
    secret: 'cache-tls',
    type: 'kubernetes.io/tls',
    data: (n: number) => ({ 'tls.crt': `-----BEGIN CERTIFICATE-----\ncert-${n}\n-----END CERTIFICATE-----\n`, 'tls.key': `-----BEGIN PRIVATE KEY-----\nkey-${n}\n-----END PRIVATE KEY-----\n` }),
    args: ['-Z', '-o', 'ssl_chain_cert=/etc/memcached/tls/tls.crt,ssl_key=/etc/memcached/tls/tls.key'],
  },
  {
    what: 'auth',
    annotation: 'checksum/auth-secret',
    spec: { auth: { enabled: true, secretName: 'cache-auth' }, reload: { enabled: false } },
    secret: 'cache-auth',
    type: 'Opaque',
    data: (n: number) => ({ passwords: `app:password-${n}\n` }),
    args: ['-Y', '/etc/memcached/auth/passwords'],
  },
] as const

for (const c of SECRET_CASES) {
  t.test(`${c.what} from a Secret, reload.enabled false: missing, nothing applied; created, the pods carry ${c.annotation}; rotated, a new ReplicaSet replaces the pods`, async (t) => {
    const bed = await startBed({ chart })
    t.teardown(() => bed.stop())
    await bed.client.create(cr('sec', { size: 2, ...c.spec }))
    const missing = await degraded(bed.client, 'sec', 'SecretNotFound')
    t.equal(missing.message, `Secret default/${c.secret} does not exist (the chart refers to it; create it with the label cache.example.com/memcached-input=true)`)
    t.equal(condition(await getMc(bed.client, 'sec'), 'Ready')?.reason, 'SecretNotFound', 'Ready says why')
    t.same(objectWrites(bed, 'sec'), [], 'nothing was applied')
    for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) t.notOk(await findObject(bed.client, apiVersion, kind, 'sec'), `no ${kind}`)

    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: c.secret, namespace: 'default', labels: LABEL }, type: c.type, stringData: c.data(1) } as KubeObject
    await bed.client.create(secret)
    await converged(bed.client, 'sec', 2)
    const first = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'sec' })
    const sum1 = secretChecksum({ type: c.type, stringData: c.data(1) })
    t.equal(templateOf(first).metadata.annotations?.[c.annotation], sum1, `the pod template carries ${c.annotation}, the digest of the Secret`)
    const memcached = templateOf(first).spec.containers.find((k) => k.name === 'memcached')!
    t.match(memcached.args?.join(' '), c.args.join(' '), 'memcached is started with it')
    t.ok(templateOf(first).spec.volumes?.some((v) => v.secret?.secretName === c.secret), 'the Secret is mounted')
    const podsBefore = new Set((await pods(bed.client, 'sec')).map((p) => p.metadata.name))
    const replicaSets = async () => (await bed.client.list({ apiVersion: 'apps/v1', kind: 'ReplicaSet' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=sec' })).items
    const rsBefore = (await replicaSets()).map((r) => r.metadata.name)
    t.equal(rsBefore.length, 1)

    await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: c.secret }, { stringData: c.data(2) }, { type: 'merge' })
    const sum2 = secretChecksum({ type: c.type, stringData: c.data(2) })
    await eventually(`${c.annotation} changed`, async () => {
      const d = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'sec' })
      return templateOf(d).metadata.annotations?.[c.annotation] === sum2 ? true : undefined
    })
    t.not(sum2, sum1)
    const rolled = await eventually('a new ReplicaSet with every pod replaced', async () => {
      const rs = await replicaSets()
      const now = await pods(bed.client, 'sec')
      const fresh = rs.find((r) => !rsBefore.includes(r.metadata.name!))
      return fresh && now.length === 2 && now.every((p) => !podsBefore.has(p.metadata.name) && isReady(p) && p.metadata.ownerReferences?.[0]?.name === fresh.metadata.name) ? fresh : undefined
    })
    t.equal(templateOf(rolled).metadata.annotations?.[c.annotation], sum2, 'the new ReplicaSet has the new checksum')
    await converged(bed.client, 'sec', 2)
  })
}

t.test('with reload.enabled false, a TLS rotation rolls a StatefulSet too: every pod re-created at the new revision, the server names unchanged', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  const tls = SECRET_CASES[0]
  await bed.client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: tls.secret, namespace: 'default', labels: LABEL }, type: tls.type, stringData: tls.data(1) } as KubeObject)
  await bed.client.create(cr('sts', { size: 2, workload: { kind: 'StatefulSet' }, ...tls.spec }))
  const before = await converged(bed.client, 'sts', 2)
  const sts = () => bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'sts' })
  const first = await sts()
  t.equal(templateOf(first).metadata.annotations?.[tls.annotation], secretChecksum({ type: tls.type, stringData: tls.data(1) }))
  const uids = new Set((await pods(bed.client, 'sts')).map((p) => p.metadata.uid))
  const revision = (first.status as { updateRevision: string }).updateRevision

  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: tls.secret }, { stringData: tls.data(2) }, { type: 'merge' })
  const rolled = await eventually('every pod re-created at a new revision', async () => {
    const s = await sts()
    const st = s.status as { updateRevision: string; currentRevision: string; updatedReplicas?: number }
    const now = await pods(bed.client, 'sts')
    return st.updateRevision !== revision && st.currentRevision === st.updateRevision && now.length === 2 && now.every((p) => !uids.has(p.metadata.uid) && isReady(p) && p.metadata.labels?.['controller-revision-hash'] === st.updateRevision) ? s : undefined
  })
  t.equal(templateOf(rolled).metadata.annotations?.[tls.annotation], secretChecksum({ type: tls.type, stringData: tls.data(2) }), 'the new checksum')
  const after = await converged(bed.client, 'sts', 2)
  t.same(statusOf(after).serverList, statusOf(before).serverList, 'the same server names')
  t.same(statusOf(after).serverList, ['sts-0.sts.default.svc:11211', 'sts-1.sts.default.svc:11211'])
})

t.test('TLS from cert-manager, reload.enabled false: the Certificate waits for its kind to be served; the Secret it writes is then picked up and rolls the pods', async (t) => {
  const bed = await startBed({ chart, discoveryPeriodMs: 100 })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  await bed.client.create(cr('cm', { size: 1, tls: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca' } } }, reload: { enabled: false } }))
  const ready = await converged(bed.client, 'cm', 1)
  t.equal(condition(ready, 'OptionalKindsServed')?.message, 'not applied, the cluster does not serve their kind: Certificate cm-tls (the cluster does not serve cert-manager.io/v1)')
  const deployment = () => bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'cm' })
  const first = await deployment()
  t.notOk(templateOf(first).metadata.annotations?.['checksum/tls-secret'], 'no checksum while the Secret does not exist')
  t.ok(templateOf(first).spec.volumes?.some((v) => v.secret?.secretName === 'cm-tls'), 'the Secret cert-manager will write is mounted')

  await installCrd(bed.client, crdFixture('certificate-crd.yaml'))
  const certificate = await eventually('the Certificate', () => findObject(bed.client, 'cert-manager.io/v1', 'Certificate', 'cm-tls'), 15_000)
  t.same(certificate.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]), [['Memcached', 'cm', ready.metadata.uid]])
  const spec = certificate.spec as { secretName: string; secretTemplate: { labels: Record<string, string> }; issuerRef: unknown; dnsNames: string[] }
  t.equal(spec.secretName, 'cm-tls')
  t.same(spec.secretTemplate.labels, LABEL, 'the Secret it writes carries the label the operator watches')
  t.same(spec.issuerRef, { name: 'ca', kind: 'Issuer', group: 'cert-manager.io' })
  t.ok(spec.dnsNames.includes('*.cm.default.svc'), 'every pod name is covered')
  await eventually('OptionalKindsServed True', async () => (condition(await getMc(bed.client, 'cm'), 'OptionalKindsServed')?.status === 'True' ? true : undefined))

  // What cert-manager does: the Secret, with the secretTemplate's labels.
  const podsBefore = new Set((await pods(bed.client, 'cm')).map((p) => p.metadata.uid))
  const data = SECRET_CASES[0].data(1)
  await bed.client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'cm-tls', namespace: 'default', labels: spec.secretTemplate.labels }, type: 'kubernetes.io/tls', stringData: data } as KubeObject)
  await eventually('checksum/tls-secret set', async () => (templateOf(await deployment()).metadata.annotations?.['checksum/tls-secret'] === secretChecksum({ type: 'kubernetes.io/tls', stringData: data }) ? true : undefined))
  await eventually('the pod replaced', async () => {
    const now = await pods(bed.client, 'cm')
    return now.length === 1 && now.every((p) => !podsBefore.has(p.metadata.uid) && isReady(p)) ? true : undefined
  })
  await converged(bed.client, 'cm', 1)
})

t.test('metrics with a ServiceMonitor and a PrometheusRule: left out while their kinds are not served, applied and owned once the CRDs are installed', async (t) => {
  const bed = await startBed({ chart, discoveryPeriodMs: 100 })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  await bed.client.create(cr('mon', { size: 1, metrics: { enabled: true, serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } } }))
  const ready = await converged(bed.client, 'mon', 1)
  const left = condition(ready, 'OptionalKindsServed')
  t.equal(left?.status, 'False')
  t.equal(left?.reason, 'KindNotServed')
  t.equal(left?.message, 'not applied, the cluster does not serve their kind: PrometheusRule mon (the cluster does not serve monitoring.coreos.com/v1); ServiceMonitor mon (the cluster does not serve monitoring.coreos.com/v1)')
  t.equal(condition(ready, 'Ready')?.status, 'True', 'still Ready: optional kinds do not count')

  const deployment = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'mon' })
  const containers = templateOf(deployment).spec.containers
  t.same(containers.map((k) => k.name), ['memcached', 'metrics'], 'the exporter sidecar')
  t.same(containers[1]!.ports?.map((p) => [p.name, p.containerPort]), [['metrics', 9150]])
  t.match(containers[1]!.args, ['--memcached.address=localhost:11211', '--web.listen-address=:9150'])
  const svc = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'mon' })
  t.same((svc.spec as { ports: { name: string; port: number; targetPort: string }[] }).ports.map((p) => [p.name, p.port, p.targetPort]), [['memcache', 11211, 'memcache'], ['metrics', 9150, 'metrics']], 'the Service has a metrics port')
  t.notOk(operatorWrites(bed.sandbox).some((w) => w.resource === 'servicemonitors' || w.resource === 'prometheusrules'), 'nothing was sent for them')

  await installMonitoringCrds(bed.client)
  const monitor = await eventually('the ServiceMonitor', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'mon'), 15_000)
  const rule = await eventually('the PrometheusRule', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'PrometheusRule', 'mon'), 15_000)
  for (const o of [monitor, rule]) {
    t.same(o.metadata.ownerReferences, [{ apiVersion: MC.apiVersion, kind: MC.kind, name: 'mon', uid: ready.metadata.uid, controller: true, blockOwnerDeletion: true }], `the ${o.kind} is owned by the CR`)
  }
  t.same(monitor.spec, { selector: { matchLabels: SELECTOR('mon') }, endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' }] })
  const groups = (rule.spec as { groups: { name: string; rules: { alert: string; expr: string }[] }[] }).groups
  t.same(groups.map((g) => g.name), ['memcached.default.mon'])
  t.same(groups[0]!.rules.map((r) => r.alert), ['MemcachedDown', 'MemcachedPodsMissing', 'MemcachedConnectionLimitNear', 'MemcachedConnectionLimitReached', 'MemcachedConnectionsRejected', 'MemcachedOutOfMemory'])
  t.equal(groups[0]!.rules[0]!.expr, 'memcached_up{namespace="default", service="mon"} == 0')
  const served = await eventually('OptionalKindsServed True', async () => {
    const o = await getMc(bed.client, 'mon')
    return condition(o, 'OptionalKindsServed')?.status === 'True' ? o : undefined
  })
  t.equal(condition(served, 'OptionalKindsServed')?.reason, 'AllServed')
  t.equal(condition(served, 'Ready')?.status, 'True')

  // Metrics off: the exporter, the metrics port and both optional objects go.
  await patchMc(bed.client, 'mon', { metrics: { enabled: false, serviceMonitor: { enabled: false }, prometheusRule: { enabled: false } } })
  await eventually('the ServiceMonitor and PrometheusRule pruned', async () =>
    (await findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', 'mon')) || (await findObject(bed.client, 'monitoring.coreos.com/v1', 'PrometheusRule', 'mon')) ? undefined : true,
  )
  t.equal(bed.metrics.counts['pruned:ServiceMonitor'], 1)
  t.equal(bed.metrics.counts['pruned:PrometheusRule'], 1)
  await converged(bed.client, 'mon', 1)
  const plain = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'mon' })
  t.same(templateOf(plain).spec.containers.map((k) => k.name), ['memcached'], 'the exporter sidecar is gone')
  const plainSvc = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'mon' })
  t.same((plainSvc.spec as { ports: { name: string }[] }).ports.map((p) => p.name), ['memcache'], 'and the metrics port')
})

t.test('networkPolicy.enabled renders a NetworkPolicy admitting the memcached port only (and the metrics port with metrics); disabling it prunes it', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create(cr('np', { size: 1, networkPolicy: { enabled: true } }))
  const o = await converged(bed.client, 'np', 1)
  const policy = async () => findObject(bed.client, 'networking.k8s.io/v1', 'NetworkPolicy', 'np')
  const np = (await policy())!
  t.ok(np, 'the NetworkPolicy')
  t.same(np.spec, { podSelector: { matchLabels: SELECTOR('np') }, policyTypes: ['Ingress'], ingress: [{ ports: [{ protocol: 'TCP', port: 11211 }] }] }, 'ingress on the memcached port only, from any source')
  t.same(np.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]), [['Memcached', 'np', o.metadata.uid]])
  const podLabels = (await pods(bed.client, 'np'))[0]!.metadata.labels ?? {}
  t.ok(Object.entries(SELECTOR('np')).every(([k, v]) => podLabels[k] === v), "its selector selects the instance's pods")

  await patchMc(bed.client, 'np', { metrics: { enabled: true }, networkPolicy: { allowedSources: [{ podSelector: { matchLabels: { role: 'app' } } }] } })
  const withMetrics = await eventually('the metrics port admitted', async () => {
    const p = await policy()
    return (p?.spec as { ingress?: unknown[] } | undefined)?.ingress?.length === 2 ? p : undefined
  })
  t.same((withMetrics.spec as { ingress: unknown }).ingress, [
    { from: [{ podSelector: { matchLabels: { role: 'app' } } }], ports: [{ protocol: 'TCP', port: 11211 }] },
    { ports: [{ protocol: 'TCP', port: 9150 }] },
  ], 'memcached from the allowed sources, metrics from any')
  await converged(bed.client, 'np', 1)

  await patchMc(bed.client, 'np', { networkPolicy: { enabled: false } })
  await eventually('the NetworkPolicy pruned', async () => ((await policy()) ? undefined : true))
  t.ok(operatorWrites(bed.sandbox).some((w) => w.verb === 'delete' && w.resource === 'networkpolicies' && w.name === 'np'), 'deleted by the operator')
  t.equal(bed.metrics.counts['pruned:NetworkPolicy'], 1)
  await converged(bed.client, 'np', 1)
})

t.test('the production sample applied with kubectl converges: a StatefulSet of three, the exporter, its ServiceMonitor and PrometheusRule', async (t) => {
  // The sample asks for a ServiceMonitor and alerts, which is the point of a production instance:
  // the Prometheus Operator's CRDs are installed first, so that every object it renders is applied
  // (the test above covers a cluster without them). The operator finds them at its next discovery
  // round, a tenth of a second here.
  const bed = await startBed({ chart, discoveryPeriodMs: 100 })
  t.teardown(() => bed.stop())
  bed.client.learnKinds(chart.kinds)
  await installMonitoringCrds(bed.client)
  const kubectl = kubectlFor(bed.sandbox.kubeconfigPath)
  const sample = resolve(import.meta.dirname, '..', 'kustomize', 'samples', 'cache_v1alpha1_memcached_production.yaml')
  t.match(await kubectl(['apply', '-n', 'default', '-f', sample]), /memcached\.cache\.example\.com\/memcached-production created/)
  const name = 'memcached-production'
  const o = await converged(bed.client, name, 3)
  t.same(statusOf(o).serverList, [0, 1, 2].map((i) => `${name}-${i}.${name}.default.svc:11211`))
  const sts = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name })
  const spec = sts.spec as { minReadySeconds: number; template: PodTemplate & { spec: { terminationGracePeriodSeconds: number; topologySpreadConstraints: unknown[] } } }
  t.equal(spec.minReadySeconds, 10)
  t.equal(spec.template.spec.terminationGracePeriodSeconds, 40)
  t.equal(spec.template.spec.topologySpreadConstraints.length, 1)
  const [memcached, exporter] = spec.template.spec.containers
  t.same(memcached?.args, ['-p', '11211', '-m', '1024', '-c', '4096', '-t', '4', '-I', '2m'])
  t.equal(exporter?.name, 'metrics')
  t.ok(await eventually('the ServiceMonitor', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'ServiceMonitor', name)))
  t.ok(await eventually('the PrometheusRule', () => findObject(bed.client, 'monitoring.coreos.com/v1', 'PrometheusRule', name)))
  const served = await eventually('OptionalKindsServed True', async () => {
    const cur = await getMc(bed.client, name)
    return condition(cur, 'OptionalKindsServed')?.status === 'True' ? cur : undefined
  })
  t.equal(condition(served, 'Ready')?.status, 'True')
  t.match(await kubectl(['get', 'mc', name, '-n', 'default']), new RegExp(`\\n${name}\\s+3\\s+3\\s+3\\s+Reconciled\\s`))
})

t.test('an invalid combination is InvalidSpec with the path, applies nothing, and leaves a previously good CR\'s objects as they were', async (t) => {
  // The CRD of a cluster that holds CRs from before the rules: the API server stores them, the operator refuses them.
  const bed = await startBed({ chart, sandbox: { installCRDs: [crdBeforeRules(chart)] } })
  t.teardown(() => bed.stop())
  await bed.client.create(cr('bad', { size: 1, workload: { kind: 'StatefulSet' }, service: { headless: false } }))
  const d = await degraded(bed.client, 'bad', 'InvalidSpec')
  t.match(d.message, "spec.service.headless: must be true when spec.workload.kind is StatefulSet (the pods' stable DNS names come from the headless Service)")
  t.same(objectWrites(bed, 'bad'), [], 'nothing was applied')
  for (const [apiVersion, kind] of [['apps/v1', 'StatefulSet'], ['apps/v1', 'Deployment'], ['v1', 'Service']] as const) t.notOk(await findObject(bed.client, apiVersion, kind, 'bad'), `no ${kind}`)

  await bed.client.create(cr('good', { size: 2, memoryMB: 16 }))
  await converged(bed.client, 'good', 2)
  const live = async () => Promise.all([['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']].map(([a, k]) => bed.client.get({ apiVersion: a!, kind: k!, namespace: 'default', name: 'good' })))
  const before = await live()
  bed.sandbox.requests.reset()
  await patchMc(bed.client, 'good', { resources: { limits: { memory: '40Mi' } } })
  const invalid = await degraded(bed.client, 'good', 'InvalidSpec')
  t.match(invalid.message, 'spec.resources.limits.memory: must be at least 51Mi: spec.memoryMB (16) + 2Mi for memcached\'s hash table once full of small items + 1Mi for spec.maxConnections (1024) + 32Mi for the process (got "40Mi"); leave it out to get exactly that')
  t.equal(condition(await getMc(bed.client, 'good'), 'Ready')?.reason, 'InvalidSpec')
  t.same(objectWrites(bed, 'good'), [], 'nothing was applied')
  t.same((await live()).map((o) => o.metadata.resourceVersion), before.map((o) => o.metadata.resourceVersion), 'the Deployment, Service and PodDisruptionBudget are unchanged')
  t.equal((await pods(bed.client, 'good')).length, 2, 'the pods still run')

  // Fixed: applied again.
  await patchMc(bed.client, 'good', { resources: { limits: { memory: '51Mi' } } })
  await converged(bed.client, 'good', 2)
  const fixed = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'good' })
  t.equal((fixed.spec as { template: { spec: { containers: { resources: { limits: { memory: string } } }[] } } }).template.spec.containers[0]!.resources.limits.memory, '51Mi')
})
