/**
 * charts/memcached-operator, the operator's own install with Helm: rendered by real `helm template`
 * (helm 4), it must hold what kustomize/default builds (the expectation comes from `kubectl
 * kustomize`, not from copies), its values must turn into the flags and RBAC they say, `helm lint`
 * must pass, and `helm install` must install it on the sandbox; with rbac.namespaced the operator
 * runs as its ServiceAccount on the chart's Roles and is refused Secrets in other namespaces.
 */
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import pino from 'pino'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { rolloutCRD } from '../operator/api/rollout-crd.ts'
import { ApiError, KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { readPlatformOverlays } from '../operator/cli/overlays-file.ts'
import { runCli } from '../operator/cli/program.ts'
import { packageVersion } from '../operator/cli/io.ts'
import { startOperator } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { MAX_JSON_PATCH_OPS, MAX_OVERLAYS, OVERLAY_SCHEMA } from '../operator/render/overlay-schema.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { allowing, grantsFor, kustomize, ROOT, type Attributes, type Grant } from './deploy-manifests.ts'
import { captureIO } from './support/io.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'
import { helmPath } from './support/tools.ts'

const CHART = join(ROOT, 'charts/memcached-operator')
const NS = 'memcached-operator-system'
const RELEASE = 'memcached-operator'
const SA = 'memcached-operator-controller-manager'
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const

const home = tempDir('mc-helm-')
const helmEnv = (kubeconfig?: string): NodeJS.ProcessEnv => ({ ...process.env, HOME: home, HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data'), ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}) })

/** Runs helm; resolves with its exit code and output (never rejects: the refusals are tested). */
function helm(args: string[], kubeconfig?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(helmPath(), args, { env: helmEnv(kubeconfig), timeout: 120_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }))
  })
}

/** The objects of `helm template memcached-operator charts/memcached-operator -n memcached-operator-system --include-crds` with `args`. */
async function render(...args: string[]): Promise<KubeObject[]> {
  return renderRelease(RELEASE, ...args)
}

async function renderRelease(release: string, ...args: string[]): Promise<KubeObject[]> {
  const r = await helm(['template', release, CHART, '--namespace', NS, '--include-crds', ...args])
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`)
  return parseAllDocuments(r.stdout)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(String(d.errors[0]))
      return d.toJS() as KubeObject | null
    })
    .filter((o): o is KubeObject => o !== null)
}

type Container = { name: string; image: string; args: string[]; [k: string]: unknown }
type Deployment = KubeObject & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[]; affinity?: any; nodeSelector?: object; tolerations?: object[]; volumes?: object[]; [k: string]: unknown } } } }
const key = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`
const only = <T extends KubeObject = KubeObject>(objects: KubeObject[], kind: string, name?: string): T => {
  const all = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name))
  if (all.length !== 1) throw new Error(`expected one ${kind} ${name ?? ''}, got ${all.length}`)
  return all[0] as T
}
/** The pod spec with the anti-affinity's label selector taken out (the chart's selects the release too). */
const withoutAffinityLabels = (d: Deployment) => {
  const spec = structuredClone(d.spec.template.spec)
  const term = spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm
  const labels = term.labelSelector.matchLabels
  delete term.labelSelector
  return { spec, labels }
}
/** Grants in a comparable order (the chart's templates come in another order than kustomize's resources). */
const canonical = (v: unknown): unknown => (Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, canonical(x)])) : v)
const sorted = (grants: Grant[]) => grants.map((g) => JSON.stringify(canonical(g))).sort()
const cli = async (args: string[]) => {
  const io = captureIO()
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

const kustomized = kustomize('default')

/** A values file whose platformOverlays are the overlays of the sample kustomize/manager/platform-overlays.yaml. */
const SAMPLE_OVERLAYS = join(ROOT, 'kustomize/manager/platform-overlays.yaml')
const overlaysValues = join(home, 'platform-overlays-values.yaml')
writeFileSync(overlaysValues, JSON.stringify({ platformOverlays: (parseAllDocuments(readFileSync(SAMPLE_OVERLAYS, 'utf8'))[0]!.toJS() as { overlays: unknown[] }).overlays }))

t.test("the chart's CRD and the manager's rules are the generated ones", async (t) => {
  const crd = await cli(['crd'])
  t.equal(crd.code, 0)
  t.equal(readFileSync(join(CHART, 'crds/cache.example.com_memcacheds.yaml'), 'utf8'), crd.out, 'regenerate with: npx memcached-operator crd > charts/memcached-operator/crds/cache.example.com_memcacheds.yaml')
  const revisions = await cli(['crd', '--kind', 'ChartRevision'])
  t.equal(revisions.code, 0)
  t.equal(readFileSync(join(CHART, 'crds/cache.example.com_chartrevisions.yaml'), 'utf8'), revisions.out, 'regenerate with: npx memcached-operator crd --kind ChartRevision > charts/memcached-operator/crds/cache.example.com_chartrevisions.yaml')
  const rollouts = await cli(['crd', '--kind', 'Rollout'])
  t.equal(rollouts.code, 0)
  t.equal(readFileSync(join(CHART, 'crds/cache.example.com_rollouts.yaml'), 'utf8'), rollouts.out, 'regenerate with: npx memcached-operator crd --kind Rollout > charts/memcached-operator/crds/cache.example.com_rollouts.yaml')
  const chartYaml = parseAllDocuments(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))[0]!.toJS() as { apiVersion: string; appVersion: string }
  t.equal(chartYaml.apiVersion, 'v2')
  t.equal(chartYaml.appVersion, packageVersion(), "the appVersion (the image's default tag) is the package's version")
  const rbac = await cli(['rbac'])
  t.equal(rbac.code, 0)
  t.equal(readFileSync(join(CHART, 'files/manager-role.yaml'), 'utf8'), rbac.out, 'regenerate with: npx memcached-operator rbac > charts/memcached-operator/files/manager-role.yaml')
})

t.test('helm template with the default values holds what kustomize/default builds', async (t) => {
  const objects = await render()
  // The namespace is Helm's to create (`--create-namespace`), not the chart's.
  t.same(objects.map(key).sort(), kustomized.filter((o) => o.kind !== 'Namespace').map(key).sort(), 'the same kinds, names and namespaces')
  t.same(only(objects, 'CustomResourceDefinition', 'memcacheds.cache.example.com'), memcachedCRD(loadChart()), 'the CRD is what `memcached-operator crd` prints')
  t.same(only(objects, 'CustomResourceDefinition', 'chartrevisions.cache.example.com'), chartRevisionCRD(), 'the ChartRevision CRD is what `memcached-operator crd --kind ChartRevision` prints')
  t.same(only(objects, 'CustomResourceDefinition', 'rollouts.cache.example.com'), rolloutCRD(), 'the Rollout CRD is what `memcached-operator crd --kind Rollout` prints')
  for (const o of objects) {
    if (o.kind === 'CustomResourceDefinition') continue
    t.match(o.metadata.labels, { 'app.kubernetes.io/part-of': 'memcached-operator', 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/managed-by': 'Helm' }, `${key(o)} is labelled`)
  }
  for (const k of kustomized.filter((o) => /Role$/.test(o.kind))) {
    t.same((only(objects, k.kind, k.metadata.name) as { rules?: unknown }).rules, (k as { rules?: unknown }).rules, `${key(k)}: the same rules`)
  }
  for (const k of kustomized.filter((o) => /Binding$/.test(o.kind))) {
    const h = only(objects, k.kind, k.metadata.name) as { roleRef?: unknown; subjects?: unknown }
    t.same([h.roleRef, h.subjects], [(k as typeof h).roleRef, (k as typeof h).subjects], `${key(k)}: the same role and subjects`)
  }
  t.same(sorted(grantsFor(objects, NS, SA)), sorted(grantsFor(kustomized, NS, SA)), 'the ServiceAccount is granted the same')

  const hd = only<Deployment>(objects, 'Deployment')
  const kd = only<Deployment>(kustomized, 'Deployment')
  t.equal(hd.spec.replicas, kd.spec.replicas)
  t.match(hd.spec.template.metadata.labels, hd.spec.selector.matchLabels, 'the selector selects the pods')
  t.match(hd.spec.selector.matchLabels, kd.spec.selector.matchLabels, "kustomize's pod labels, and the release")
  const h = withoutAffinityLabels(hd)
  const k = withoutAffinityLabels(kd)
  t.same(h.labels, hd.spec.selector.matchLabels, 'the replicas spread away from each other')
  t.same(k.labels, kd.spec.selector.matchLabels)
  const [hc, kc] = [h.spec.containers, k.spec.containers]
  t.same(hc.map((c) => c.args), kc.map((c) => [...c.args, '--leader-election-id=memcached-operator-leader']), "kustomize's arguments, and the Lease's name spelt out")
  t.same(
    { ...h.spec, containers: hc.map((c) => ({ ...c, args: [] })) },
    { ...k.spec, containers: kc.map((c) => ({ ...c, args: [] })) },
    'the same pod: image, env, ports, probes, resources, security contexts, volumes, grace period',
  )

  const hs = only(objects, 'Service') as KubeObject & { spec: { selector: object; ports: unknown } }
  const ks = only(kustomized, 'Service') as typeof hs
  t.same(hs.spec.ports, ks.spec.ports, 'the metrics Service: https on 8443')
  t.same(hs.spec.selector, hd.spec.selector.matchLabels)
  t.notOk(objects.some((o) => o.kind === 'ServiceMonitor'), 'no ServiceMonitor by default')
})

t.test('serviceMonitor.enabled adds the ServiceMonitor of kustomize/prometheus', async (t) => {
  const objects = await render('--set', 'serviceMonitor.enabled=true')
  type Monitor = KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: unknown[] } }
  const m = only<Monitor>(objects, 'ServiceMonitor')
  const k = only<Monitor>(kustomize('prometheus'), 'ServiceMonitor')
  t.equal(m.apiVersion, k.apiVersion)
  t.equal(m.metadata.namespace, NS)
  t.same(m.spec.endpoints, k.spec.endpoints)
  t.match(only(objects, 'Service').metadata.labels, m.spec.selector.matchLabels, 'it selects the metrics Service')
})

t.test('values become the flags, the scheduling and the RBAC they name', async (t) => {
  const objects = await render(
    '--set', 'namespaces={team-a,team-b}',
    '--set', 'selector=cache.example.com/shard!=b',
    '--set', 'leaderElection.id=shard-a',
    '--set', 'extraArgs={--concurrency=8,--log-level=debug}',
    '--set', 'image.repository=registry.example.com/memcached-operator,image.tag=0.2.0,image.pullPolicy=Always',
    '--set', 'replicas=3',
    '--set', 'nodeSelector.kubernetes\\.io/os=linux',
    '--set', 'tolerations[0].key=dedicated,tolerations[0].operator=Exists,tolerations[0].effect=NoSchedule',
    '--set', 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool',
    '--set', 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
    '--set', 'resources.limits.memory=1Gi',
    '--set', 'metrics.certSecret=metrics-tls',
  )
  const d = only<Deployment>(objects, 'Deployment')
  const pod = d.spec.template.spec
  const c = pod.containers[0]!
  t.equal(d.spec.replicas, 3)
  t.equal(c.image, 'registry.example.com/memcached-operator:0.2.0')
  t.equal(c.imagePullPolicy, 'Always')
  const kargs = only<Deployment>(kustomized, 'Deployment').spec.template.spec.containers[0]!.args
  t.same(c.args, [...kargs, '--leader-election-id=shard-a', '--namespace=team-a', '--namespace=team-b', '--selector=cache.example.com/shard!=b', '--metrics-cert-dir=/etc/memcached-operator/metrics-certs', '--concurrency=8', '--log-level=debug'])
  t.same(pod.nodeSelector, { 'kubernetes.io/os': 'linux' })
  t.same(pod.tolerations, [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }])
  t.same(pod.affinity, { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'Exists' }] }] } } }, 'affinity replaces the default anti-affinity')
  t.match(c.resources, { limits: { memory: '1Gi', cpu: '1' }, requests: { memory: '256Mi' } }, 'a value merges into the default resources')
  t.match(pod.volumes, [{ name: 'tmp' }, { name: 'metrics-certs', secret: { secretName: 'metrics-tls' } }])
  t.match(c.volumeMounts, [{ mountPath: '/tmp' }, { name: 'metrics-certs', mountPath: '/etc/memcached-operator/metrics-certs', readOnly: true }])
  const lease = only<KubeObject & { rules: { resourceNames?: string[] }[] }>(objects, 'Role', 'memcached-operator-leader-election-role')
  t.same(lease.rules[0]!.resourceNames, ['shard-a'], 'the leader-election Role names the Lease')
  t.equal(only(objects, 'ClusterRole', 'memcached-operator-manager-role').kind, 'ClusterRole', 'without rbac.namespaced the rules stay cluster-wide')
})

t.test('the ServiceAccount, RBAC, Service and pod metadata can be left out or named', async (t) => {
  const objects = await render(
    '--set', 'serviceAccount.create=false,serviceAccount.name=platform-operator',
    '--set', 'rbac.create=false',
    '--set', 'metrics.service.enabled=false',
    '--set', 'imagePullSecrets[0].name=registry',
    '--set', 'podLabels.team=cache,podAnnotations.example\\.com/owner=cache',
    '--set', 'priorityClassName=system-cluster-critical',
  )
  t.same(objects.map((o) => o.kind).sort(), ['CustomResourceDefinition', 'CustomResourceDefinition', 'CustomResourceDefinition', 'Deployment'], 'the CRDs and the Deployment only')
  const d = only<Deployment>(objects, 'Deployment')
  const pod = d.spec.template.spec
  t.equal(pod.serviceAccountName, 'platform-operator')
  t.same(pod.imagePullSecrets, [{ name: 'registry' }])
  t.equal(pod.priorityClassName, 'system-cluster-critical')
  t.match(d.spec.template.metadata, { labels: { ...d.spec.selector.matchLabels, team: 'cache' }, annotations: { 'example.com/owner': 'cache' } })
  const named = await render('--set', 'serviceAccount.name=platform-operator,serviceAccount.annotations.example\\.com/role=operator')
  t.match(only(named, 'ServiceAccount').metadata, { name: 'platform-operator', annotations: { 'example.com/role': 'operator' } })
  t.same(grantsFor(named, NS, 'platform-operator').length, grantsFor(kustomized, NS, SA).length, 'the bindings name it')
})

t.test('rbac.namespaced: the rules of kustomize/namespaced as a Role in each watched namespace', async (t) => {
  const objects = await render('--set', 'rbac.namespaced=true', '--set', 'namespaces={memcached,other-team}')
  const roles = objects.filter((o) => o.metadata.name === 'memcached-operator-manager-role' || o.metadata.name === 'memcached-operator-manager-rolebinding')
  t.same(roles.map(key).sort(), ['Role memcached/memcached-operator-manager-role', 'Role other-team/memcached-operator-manager-role', 'RoleBinding memcached/memcached-operator-manager-rolebinding', 'RoleBinding other-team/memcached-operator-manager-rolebinding'])
  const namespaced = kustomize('namespaced')
  const kRole = only(namespaced, 'Role', 'memcached-operator-manager-role') as { rules?: unknown }
  for (const ns of ['memcached', 'other-team']) {
    const role = objects.find((o) => o.kind === 'Role' && o.metadata.namespace === ns) as { rules?: unknown }
    t.same(role.rules, kRole.rules, `${ns}: the same rules as kustomize/namespaced`)
  }
  const grants = grantsFor(objects, NS, SA)
  t.same(sorted(grantsFor(namespaced, NS, SA).filter((g) => g.namespace !== 'memcached')), sorted(grants.filter((g) => g.namespace !== 'memcached' && g.namespace !== 'other-team')), 'the cluster-wide and own-namespace grants of kustomize/namespaced')
  t.notOk(grants.some((g) => g.namespace === undefined && (g.rule.resources ?? []).includes('secrets')), 'no cluster-wide Secret access')
  t.same(grants.filter((g) => (g.rule.resources ?? []).includes('secrets')).map((g) => g.namespace).sort(), ['memcached', 'other-team'], 'Secrets in each watched namespace, through the input-secrets ClusterRole')
})

t.test('rbac.inputSecretNamespaces: the input-secrets ClusterRole bound in those namespaces only; by default nowhere', async (t) => {
  const secretGrants = (objects: KubeObject[]) => grantsFor(objects, NS, SA).filter((g) => (g.rule.resources ?? []).includes('secrets'))
  t.same(secretGrants(await render()), [], 'the default install reads no Secret')
  const objects = await render('--set', 'rbac.inputSecretNamespaces={team-a,team-b}')
  t.same(secretGrants(objects).map((g) => [g.namespace, g.rule.verbs]), [['team-a', ['get', 'list', 'watch']], ['team-b', ['get', 'list', 'watch']]])
})

t.test('a second release is a shard of its own: its names, its Lease, its pods', async (t) => {
  const a = await render('--set', 'selector=cache.example.com/shard!=b')
  const b = await renderRelease('memcached-operator-shard-b', '--set', 'selector=cache.example.com/shard=b')
  t.same(b.map(key).filter((k) => a.map(key).includes(k)), ['CustomResourceDefinition /chartrevisions.cache.example.com', 'CustomResourceDefinition /memcacheds.cache.example.com', 'CustomResourceDefinition /rollouts.cache.example.com'], 'only the CRDs are shared (Helm installs them once)')
  const args = (objects: KubeObject[]) => only<Deployment>(objects, 'Deployment').spec.template.spec.containers[0]!.args
  t.ok(args(a).includes('--selector=cache.example.com/shard!=b'))
  t.ok(args(b).includes('--selector=cache.example.com/shard=b'))
  t.ok(args(b).includes('--leader-election-id=memcached-operator-shard-b-leader'), 'a Lease of its own')
  const leaseRole = b.find((o) => o.kind === 'Role' && o.metadata.name === 'memcached-operator-shard-b-leader-election-role') as unknown as { rules: { resourceNames?: string[] }[] }
  t.same(leaseRole.rules[0]!.resourceNames, ['memcached-operator-shard-b-leader'], 'which its Role lets it take')
  const selects = (from: KubeObject[], pods: KubeObject[]) => {
    const sel = only<Deployment>(from, 'Deployment').spec.selector.matchLabels
    const labels = only<Deployment>(pods, 'Deployment').spec.template.metadata.labels
    return Object.entries(sel).every(([k, v]) => labels[k] === v)
  }
  t.notOk(selects(a, b), "the first Deployment does not select shard b's pods")
  t.notOk(selects(b, a), 'nor the other way round')
  t.equal(only(b, 'Service').metadata.name, 'memcached-operator-shard-b-controller-manager-metrics-service')
})

t.test('bad values are refused with what and where', async (t) => {
  const refused = async (args: string[], message: RegExp, what: string) => {
    const r = await helm(['template', RELEASE, CHART, ...args])
    t.not(r.code, 0, what)
    t.match(r.stderr, message, what)
  }
  await refused(['--set', 'replicas=two'], /at '\/replicas': got string, want integer/, 'the schema types replicas')
  await refused(['--set', 'replica=2'], /additional properties 'replica' not allowed/, 'the schema knows every value')
  await refused(['--set', 'namespaces={Team_A}'], /at '\/namespaces\/0': 'Team_A' does not match pattern/, 'a namespace is a DNS label')
  await refused(['--set', 'extraArgs={concurrency=8}'], /at '\/extraArgs\/0'/, 'an extra argument is a flag')
  await refused(['--set', 'rbac.namespaced=true'], /rbac\.namespaced=true needs namespaces/, 'namespaced RBAC needs the namespaces')
  await refused(['--set', 'leaderElection.enabled=false'], /replicas > 1 needs leaderElection\.enabled/, 'two replicas without a Lease would both reconcile')
  await refused(['--set', 'podLabels.control-plane=other'], /podLabels\.control-plane: the Deployment's selector sets this label/, 'a pod label cannot unselect the pods')
  await refused(['--set', 'metrics.service.enabled=false', '--set', 'serviceMonitor.enabled=true'], /serviceMonitor\.enabled needs metrics\.service\.enabled/, 'a ServiceMonitor needs the Service')
  const single = await render('--set', 'leaderElection.enabled=false', '--set', 'replicas=1')
  t.notOk(only<Deployment>(single, 'Deployment').spec.template.spec.containers[0]!.args.some((a) => a.startsWith('--leader-elect')), 'one replica without leader election')
  t.notOk(single.some((o) => o.metadata.name === 'memcached-operator-leader-election-role'), 'and no Lease Role')
})

t.test('platformOverlays: a ConfigMap holding the file of `run --overlays`, mounted into the manager with the flag', async (t) => {
  const objects = await render('-f', overlaysValues)
  const cm = only<KubeObject & { data: Record<string, string> }>(objects, 'ConfigMap', 'memcached-operator-platform-overlays')
  t.equal(cm.metadata.namespace, NS)
  t.same(Object.keys(cm.data), ['overlays.yaml'], 'one file')
  const d = only<Deployment>(objects, 'Deployment')
  const pod = d.spec.template.spec
  const manager = pod.containers[0]!
  const flags = manager.args.filter((a) => a.startsWith('--overlays'))
  t.same(flags, ['--overlays=/etc/memcached-operator/platform-overlays/overlays.yaml'], 'the manager is given the file')
  t.same(pod.volumes?.filter((v) => (v as { name: string }).name === 'platform-overlays'), [{ name: 'platform-overlays', configMap: { name: cm.metadata.name } }], "the ConfigMap is the pod's volume")
  t.same((manager.volumeMounts as object[]).filter((m) => (m as { name: string }).name === 'platform-overlays'), [{ name: 'platform-overlays', mountPath: '/etc/memcached-operator/platform-overlays', readOnly: true }], 'mounted read-only where the flag points')
  // The operator's own reader (`run --overlays`) takes the rendered file as it takes the sample.
  const file = join(home, 'rendered-overlays.yaml')
  writeFileSync(file, cm.data['overlays.yaml']!)
  // (`who` names the file an overlay came from: the one path that differs.)
  const unnamed = (overlays: ReturnType<typeof readPlatformOverlays>) => overlays.map(({ who, ...o }) => ({ name: who.replace(/^.*: /, ''), ...o }))
  const read = unnamed(readPlatformOverlays(file, ROOT))
  t.equal(read.length, 2)
  t.same(read, unnamed(readPlatformOverlays(SAMPLE_OVERLAYS, ROOT)), 'the same overlays, selector included, as the sample file')
  // A change of the overlays rolls the manager, which reads them once.
  const checksum = (o: KubeObject[]) => (only<Deployment>(o, 'Deployment').spec.template.metadata as { annotations?: Record<string, string> }).annotations?.['checksum/platform-overlays']
  const other = await render('-f', overlaysValues, '--set', 'platformOverlays[0].name=spot')
  t.match(checksum(objects), /^[0-9a-f]{64}$/)
  t.not(checksum(other), checksum(objects), 'another file, another pod template')

  const none = await render()
  t.notOk(none.some((o) => o.kind === 'ConfigMap'), 'unset: no ConfigMap')
  const plain = only<Deployment>(none, 'Deployment').spec.template
  t.notOk(plain.spec.containers[0]!.args.some((a) => a.startsWith('--overlays')), 'no flag')
  t.notOk(JSON.stringify(plain).includes('platform-overlays'), 'no volume, mount or checksum')
})

t.test('platformOverlays of the wrong shape are refused by the schema', async (t) => {
  const refused = async (args: string[], message: RegExp, what: string) => {
    const r = await helm(['template', RELEASE, CHART, ...args])
    t.not(r.code, 0, what)
    t.match(r.stderr, message, what)
  }
  await refused(['--set', 'platformOverlays.name=x'], /at '\/platformOverlays': got object, want array/, 'a list')
  await refused(['--set', 'platformOverlays[0].target.kind=Deployment'], /at '\/platformOverlays\/0': missing property 'strategicMerge'/, 'a patch is required')
  await refused(['--set', 'platformOverlays[0].patch=x', '--set', 'platformOverlays[0].strategicMerge.metadata.labels.a=b'], /additional properties 'patch' not allowed/, 'no unknown key')
  await refused(['--set', 'platformOverlays[0].jsonPatch[0].op=merge', '--set', 'platformOverlays[0].jsonPatch[0].path=/spec'], /at '\/platformOverlays\/0\/jsonPatch\/0\/op': value must be one of/, 'an RFC 6902 operation')
  await refused(['--set', 'platformOverlays[0].memcachedSelector=true', '--set', 'platformOverlays[0].strategicMerge.metadata.labels.a=b'], /at '\/platformOverlays\/0\/memcachedSelector': got boolean, want string/, 'a selector is a string')
  await refused(['--set', 'platformOverlays[0].target.kinds=Deployment', '--set', 'platformOverlays[0].strategicMerge.metadata.labels.a=b'], /additional properties 'kinds' not allowed/, "a target's fields are kustomize's")
  // The schema's copy of the operator's bounds and keys (operator/render/overlay-schema.ts) stays in step.
  type Schema = { maxItems?: number; properties: Record<string, Schema> }
  const schema = (JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Schema).properties.platformOverlays!
  const item = (schema as Schema & { items: Schema }).items
  t.equal(schema.maxItems, MAX_OVERLAYS, 'as many overlays as the operator takes')
  t.equal(item.properties.jsonPatch!.maxItems, MAX_JSON_PATCH_OPS, 'as many operations')
  t.same(Object.keys(item.properties).sort(), [...Object.keys(OVERLAY_SCHEMA.properties), 'memcachedSelector'].sort(), "an overlay's keys and memcachedSelector")
  t.same(Object.keys(item.properties.target!.properties).sort(), Object.keys(OVERLAY_SCHEMA.properties.target.properties).sort(), "a target's keys")
})

t.test('helm lint --strict passes, with the default and the namespaced values', async (t) => {
  for (const args of [[], ['--set', 'rbac.namespaced=true', '--set', 'namespaces={memcached}', '--set', 'serviceMonitor.enabled=true'], ['-f', overlaysValues]]) {
    const r = await helm(['lint', '--strict', CHART, ...args])
    const which = args.join(' ') || 'the default values'
    t.equal(r.code, 0, `${which}: ${r.stdout}${r.stderr}`)
    t.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/, which)
    t.notMatch(r.stdout, /\[(WARNING|ERROR)\]/, `${which}: no warning`)
  }
})

t.test('helm install on the sandbox: every object exists, the manager runs, helm uninstall removes it', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10 })
  t.teardown(() => sandbox.close())
  const kubectl = kubectlFor(sandbox.kubeconfigPath)
  const install = await helm(['install', RELEASE, CHART, '--namespace', NS, '--create-namespace'], sandbox.kubeconfigPath)
  t.equal(install.code, 0, install.stderr)
  t.match(install.stdout, /STATUS: deployed/)
  const objects = await render()
  const names = await kubectl(['get', '-f', '-', '-o', 'name'], objects.map((o) => JSON.stringify(o)).join('\n'))
  t.equal(names.trim().split('\n').length, objects.length, `every object exists:\n${names}`)
  t.match(await kubectl(['get', 'crd', 'memcacheds.cache.example.com', '-o', 'name']), 'memcacheds.cache.example.com', 'Helm installed the CRD from crds/')
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  await eventually('two manager pods', async () => {
    const pods = await user.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NS, labelSelector: `control-plane=controller-manager,app.kubernetes.io/instance=${RELEASE}` })
    return pods.items.length === 2 ? true : undefined
  })
  const upgrade = await helm(['upgrade', RELEASE, CHART, '--namespace', NS, '--set', 'replicas=3'], sandbox.kubeconfigPath)
  t.equal(upgrade.code, 0, upgrade.stderr)
  t.equal(JSON.parse(await kubectl(['-n', NS, 'get', 'deployment', SA, '-o', 'json'])).spec.replicas, 3, 'helm upgrade changes a value')
  const uninstall = await helm(['uninstall', RELEASE, '--namespace', NS], sandbox.kubeconfigPath)
  t.equal(uninstall.code, 0, uninstall.stderr)
  const left = await kubectl(['get', '-f', '-', '-o', 'name', '--ignore-not-found'], objects.filter((o) => o.kind !== 'CustomResourceDefinition').map((o) => JSON.stringify(o)).join('\n'))
  t.equal(left.trim(), '', 'the templates\' objects are gone')
  // https://helm.sh/docs/chart_best_practices/custom_resource_definitions/: Helm never deletes a CRD from crds/.
  t.match(await kubectl(['get', 'crd', '-o', 'name']), 'memcacheds.cache.example.com', 'the CRD stays (and the Memcacheds with it)')
})

t.test('helm install with rbac.namespaced: the operator reconciles its namespace as its ServiceAccount and reads no Secret elsewhere', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 100_000 })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  for (const ns of ['memcached', 'other']) await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
  const install = await helm(['install', RELEASE, CHART, '--namespace', NS, '--create-namespace', '--set', 'rbac.namespaced=true', '--set', 'namespaces={memcached}'], sandbox.kubeconfigPath)
  t.equal(install.code, 0, install.stderr)

  const asOperator = await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` })
  const chart = loadChart()
  const op = await startOperator({ kubeconfig: asOperator, namespace: ['memcached'], concurrency: '2', resyncPeriod: '10m', leaderElect: true, leaderElectionNamespace: NS, leaderElectionId: 'memcached-operator-leader', metricsBindAddress: '127.0.0.1:0', metricsSecure: true, healthProbeBindAddress: '127.0.0.1:0' }, captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => op.stop())
  await user.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-auth', namespace: 'memcached', labels: { 'cache.example.com/memcached-input': 'true' } }, stringData: { passwords: 'user:password\n' } } as KubeObject)
  await user.create({ ...MC, metadata: { name: 'keyed', namespace: 'memcached' }, spec: { size: 2, auth: { enabled: true, secretName: 'keyed-auth' } } })
  await eventually('Ready', async () => {
    const cr = await user.get({ ...MC, namespace: 'memcached', name: 'keyed' })
    return ((cr.status ?? {}) as { conditions?: { type: string; status: string }[] }).conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined
  }, 30_000)
  const UA = `memcached-operator/${packageVersion()}`
  const records = sandbox.requests.log().filter((r) => r.userAgent === UA && r.resource !== '')
  t.same(records.filter((r) => r.code === 401 || r.code === 403).map((r) => `${r.code} ${r.verb} ${r.resource} ${r.namespace ?? ''}`), [], 'the authorizer refused nothing')
  const grants = grantsFor(await render('--set', 'rbac.namespaced=true', '--set', 'namespaces={memcached}'), NS, SA)
  const requests: Attributes[] = records.map((r) => ({ verb: r.verb, group: r.group, resource: r.resource, ...(r.subresource ? { subresource: r.subresource } : {}), ...(r.namespace ? { namespace: r.namespace } : {}), ...(r.name ? { name: r.name } : {}) }))
  t.same(requests.filter((a) => allowing(grants, a).length === 0), [], "every request is allowed by the chart's RBAC")

  const kc = new KubeConfig()
  kc.loadFromFile(asOperator)
  const asSA = new KubeClient(kc, { userAgent: 'probe/1' })
  t.teardown(() => asSA.close())
  t.ok((await asSA.list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: 'memcached' })).items.length > 0, 'Secrets in the watched namespace')
  for (const namespace of ['other', undefined]) {
    const err = await asSA.list({ apiVersion: 'v1', kind: 'Secret' }, namespace ? { namespace } : {}).catch((e: unknown) => e)
    t.ok(err instanceof ApiError && err.status === 403, `the ServiceAccount cannot list Secrets ${namespace ? `in ${namespace}` : 'cluster-wide'}`)
  }
})
