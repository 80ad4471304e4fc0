import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parse } from 'yaml'
import type { KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { rolloutCRD } from '../operator/api/rollout-crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { grantsFor, kustomize, kustomizeText, ROOT } from './deploy-manifests.ts'
import { clientFor, eventually } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const NS = 'memcached-operator-system'
const PREFIX = 'memcached-operator-'
const objects = kustomize('default')
const find = (kind: string) => objects.filter((o) => o.kind === kind)
const one = (kind: string) => {
  const all = find(kind)
  if (all.length !== 1) throw new Error(`expected one ${kind}, got ${all.length}`)
  return all[0]!
}
type Container = { name: string; image: string; args?: string[]; command?: string[]; env?: { name: string; value?: string }[]; ports?: { name: string; containerPort: number }[]; livenessProbe?: any; readinessProbe?: any; resources?: any; securityContext?: any; volumeMounts?: { name: string; mountPath: string }[] }
type PodSpec = { serviceAccountName: string; securityContext?: any; terminationGracePeriodSeconds?: number; containers: Container[]; volumes?: { name: string; emptyDir?: object }[] }
const deployment = one('Deployment') as KubeObject & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } }
const pod = deployment.spec.template.spec
const manager = pod.containers[0]!

t.test('kustomize/default: the namespace, the CRD, RBAC, the manager and a metrics Service, prefixed', async (t) => {
  t.same(objects.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'CustomResourceDefinition', 'CustomResourceDefinition', 'CustomResourceDefinition', 'Deployment', 'Namespace', 'Role', 'RoleBinding', 'Service', 'ServiceAccount'])
  t.equal(one('Namespace').metadata.name, NS)
  for (const o of objects) {
    if (o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition') continue
    t.ok(o.metadata.name?.startsWith(PREFIX), `${o.kind} ${o.metadata.name} has the prefix`)
    if (!o.kind.startsWith('Cluster')) t.equal(o.metadata.namespace, NS, `${o.kind} ${o.metadata.name} is in ${NS}`)
  }
  const crd = (name: string) => find('CustomResourceDefinition').find((o) => o.metadata.name === name)
  t.same(crd('memcacheds.cache.example.com'), memcachedCRD(loadChart()), 'the CRD is what `memcached-operator crd` prints')
  t.same(crd('memcacheds.cache.example.com'), parse(readFileSync(join(ROOT, 'kustomize/crd/bases/cache.example.com_memcacheds.yaml'), 'utf8')))
  t.same(crd('chartrevisions.cache.example.com'), chartRevisionCRD(), 'the ChartRevision CRD is what `memcached-operator crd --kind ChartRevision` prints')
  t.same(crd('chartrevisions.cache.example.com'), parse(readFileSync(join(ROOT, 'kustomize/crd/bases/cache.example.com_chartrevisions.yaml'), 'utf8')))
  t.same(crd('rollouts.cache.example.com'), rolloutCRD(), 'the Rollout CRD is what `memcached-operator crd --kind Rollout` prints')
  t.same(crd('rollouts.cache.example.com'), parse(readFileSync(join(ROOT, 'kustomize/crd/bases/cache.example.com_rollouts.yaml'), 'utf8')))
  t.notOk(objects.some((o) => o.kind === 'ServiceMonitor'), 'no ServiceMonitor in default/')
})

t.test('no wildcard anywhere in the RBAC, and the bindings name the Deployment\'s ServiceAccount', async (t) => {
  for (const dir of ['default', 'rbac', 'sharded', 'namespaced']) {
    for (const role of kustomize(dir).filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')) {
      for (const rule of (role as { rules?: Record<string, string[]>[] }).rules ?? []) {
        for (const [field, values] of Object.entries(rule)) t.notOk(values.some((v) => v.includes('*')), `${dir}: ${role.kind} ${role.metadata.name} ${field}: ${values.join(',')}`)
        // Discovery is every authenticated user's; the one non-resource URL is what a scraper reads.
        if ('nonResourceURLs' in rule) t.same([role.metadata.name?.endsWith('metrics-reader'), rule.nonResourceURLs, rule.verbs], [true, ['/metrics'], ['get']], 'only the metrics reader names a non-resource URL')
      }
    }
  }
  const sa = one('ServiceAccount')
  t.equal(pod.serviceAccountName, sa.metadata.name)
  const grants = grantsFor(objects, NS, sa.metadata.name ?? '')
  t.same([...new Set(grants.map((g) => `${g.from} ${g.namespace ?? 'cluster-wide'}`))].sort(), [`ClusterRole/${PREFIX}chart-revision-role cluster-wide`, `ClusterRole/${PREFIX}manager-role cluster-wide`, `ClusterRole/${PREFIX}metrics-auth-role cluster-wide`, `ClusterRole/${PREFIX}rollout-role cluster-wide`, `Role/${NS}/${PREFIX}leader-election-role ${NS}`])
  t.notOk(grants.some((g) => g.from.endsWith('metrics-reader')), 'the operator reads no metrics: the reader role is for scrapers')
})

t.test('the manager: 2 replicas with leader election, probes, metrics, resources, restricted security', async (t) => {
  t.equal(deployment.metadata.namespace, NS)
  t.equal(deployment.spec.replicas, 2)
  t.match(deployment.spec.template.metadata.labels, deployment.spec.selector.matchLabels, 'the selector selects the pods')
  t.equal(pod.containers.length, 1)
  t.equal(manager.image, 'memcached-operator:0.1.0', 'the images transformer names the image built from the Dockerfile')
  t.notOk(manager.command, 'the image\'s ENTRYPOINT (node with the executable\'s flags, `run`) is kept')
  const args = manager.args ?? []
  t.ok(args.includes('--leader-elect'))
  t.ok(args.includes('--metrics-bind-address=:8443'))
  t.ok(args.includes('--metrics-secure'), 'HTTPS with authentication and authorization, as kubebuilder scaffolds it')
  t.ok(args.includes('--health-probe-bind-address=:8081'))
  const port = (name: string | number) => (typeof name === 'number' ? name : manager.ports?.find((p) => p.name === name)?.containerPort)
  t.equal(manager.livenessProbe.httpGet.path, '/healthz')
  t.equal(port(manager.livenessProbe.httpGet.port), 8081)
  t.equal(manager.readinessProbe.httpGet.path, '/readyz')
  t.equal(port(manager.readinessProbe.httpGet.port), 8081)
  for (const k of ['cpu', 'memory']) {
    t.ok(manager.resources.requests[k], `request ${k}`)
    t.ok(manager.resources.limits[k], `limit ${k}`)
  }
  // The heap is capped below the container's limit, with room for the rest of node (~150 MB in
  // npm run bench:operator), so that V8 collects before the kernel kills; the request holds the
  // 1,000-CR peak of ~215 MB.
  const mib = (q: string) => Number(/^(\d+)Mi$/.exec(q)?.[1] ?? NaN)
  const heap = Number(/--max-old-space-size=(\d+)/.exec(manager.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '')?.[1] ?? NaN)
  t.ok(heap >= 128, `a heap cap of ${heap} MiB`)
  t.ok(heap + 192 <= mib(manager.resources.limits.memory), `${heap} MiB of heap fits the ${manager.resources.limits.memory} limit with 192 MiB to spare`)
  t.ok(mib(manager.resources.requests.memory) >= 215, 'the request covers the measured peak of 1,000 CRs')
  t.equal(pod.securityContext.runAsNonRoot, true)
  t.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault')
  t.match(manager.securityContext, { runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } })
  // kubebuilder's scaffold does the same: the UID comes from the image, so OpenShift may assign its own.
  t.equal(manager.securityContext.runAsUser, undefined, 'no fixed UID (OpenShift restricted-v2 assigns one)')
  t.match(readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8'), /^USER 65532:65532$/m, 'the image runs as a numeric non-root user, which runAsNonRoot can verify')
  // The compile cache and the validator cache go to os.tmpdir(): it must be writable.
  const tmp = manager.volumeMounts?.find((m) => m.mountPath === '/tmp')
  t.ok(tmp && pod.volumes?.find((v) => v.name === tmp.name)?.emptyDir, '/tmp is an emptyDir')
  t.ok((pod.terminationGracePeriodSeconds ?? 0) >= 30, 'time to drain and release the lease')

  const svc = one('Service') as KubeObject & { spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] } }
  t.equal(svc.metadata.name, `${PREFIX}controller-manager-metrics-service`)
  t.match(deployment.spec.template.metadata.labels, svc.spec.selector, 'the metrics Service selects the manager pods')
  t.same(svc.spec.ports.map((p) => [p.name, p.port, port(p.targetPort)]), [['https', 8443, 8443]])
})

t.test('kustomize/prometheus: default/ plus a ServiceMonitor of the metrics Service', async (t) => {
  const built = kustomize('prometheus')
  const monitors = built.filter((o) => o.kind === 'ServiceMonitor') as (KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[]; namespaceSelector?: { matchNames: string[] } } })[]
  t.equal(monitors.length, 1)
  const m = monitors[0]!
  t.equal(m.apiVersion, 'monitoring.coreos.com/v1')
  t.equal(m.metadata.namespace, NS)
  t.same(m.spec.endpoints.map((e) => [e.port, e.path]), [['https', '/metrics']])
  t.match(m.spec.endpoints[0], { scheme: 'https', bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', tlsConfig: { insecureSkipVerify: true } }, 'Prometheus sends its token over TLS to the self-signed endpoint')
  const svc = built.find((o) => o.kind === 'Service')!
  t.match(svc.metadata.labels, m.spec.selector.matchLabels, 'it selects the metrics Service')
  t.same(built.filter((o) => o.kind !== 'ServiceMonitor'), objects, 'everything else is default/ unchanged')
})

t.test('every object of kustomize/default applies to the sandbox with kubectl apply --server-side; then a sample and kubectl get mc', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10 })
  t.teardown(() => sandbox.close())
  const kubectl = (...args: string[]) => promisify(execFile)(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, ...args], { encoding: 'utf8' })
  const applied = await kubectl('apply', '--server-side', '-k', join(ROOT, 'kustomize/default'))
  const lines = applied.stdout.trim().split('\n').sort()
  t.equal(lines.length, objects.length, applied.stdout)
  t.ok(lines.every((l) => l.endsWith(' serverside-applied')), applied.stdout)
  t.equal(applied.stderr, '')
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const dir = mkdtempSync(join(tmpdir(), 'mc-deploy-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const built = join(dir, 'default.yaml')
  writeFileSync(built, kustomizeText('default'))
  const live = await kubectl('get', '-f', built, '-o', 'name')
  t.equal(live.stdout.trim().split('\n').length, objects.length, `every object exists:\n${live.stdout}`)
  // The simulated kube-controller-manager runs the manager's Deployment (the image does not run here).
  await eventually('two manager pods', async () => {
    const pods = await user.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NS, labelSelector: 'control-plane=controller-manager' })
    return pods.items.length === 2 ? true : undefined
  })
  const again = await kubectl('apply', '--server-side', '-k', join(ROOT, 'kustomize/default'))
  t.equal(again.stdout.trim().split('\n').length, objects.length, 're-applying is clean')

  await kubectl('apply', '-n', 'default', '-k', join(ROOT, 'kustomize/samples'))
  const got = await kubectl('get', 'mc', '-n', 'default')
  t.match(got.stdout, /^NAME\s+SIZE\s+READY\s+SERVERS\s+STATUS\s+AGE\n/)
  t.match(got.stdout, /\nmemcached-sample\s+3\s/)
  t.match(got.stdout, /\nmemcached-tuned\s+4\s/)

  // Uninstall as the README says: the samples first (while the operator could still clean up), then the rest.
  await kubectl('delete', '-n', 'default', '-k', join(ROOT, 'kustomize/samples'))
  const deleted = await kubectl('delete', '-k', join(ROOT, 'kustomize/default'), '--ignore-not-found')
  // Deleting the Namespace takes the namespaced objects with it; the cluster-scoped ones go by name.
  for (const o of objects.filter((o) => !o.metadata.namespace)) t.match(deleted.stdout, `"${o.metadata.name}" deleted`, `${o.kind} deleted`)
  const crds = await kubectl('get', 'crd', '-o', 'name')
  t.notMatch(crds.stdout, /memcacheds\.cache\.example\.com/, 'the CRD is gone')
  await t.rejects(kubectl('get', 'namespace', NS), 'the namespace is gone')
})

t.test('kustomize/default builds the same twice (no generated names)', async (t) => {
  t.equal(kustomizeText('default'), kustomizeText('default'))
})

t.test('the plain client-side `kubectl apply -k kustomize/default` works too', async (t) => {
  const sandbox = await startSandbox({ controllers: false })
  t.teardown(() => sandbox.close())
  const { stdout, stderr } = await promisify(execFile)(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, 'apply', '-k', join(ROOT, 'kustomize/default')], { encoding: 'utf8' })
  const lines = stdout.trim().split('\n')
  t.equal(lines.length, objects.length, stdout)
  t.ok(lines.every((l) => l.endsWith(' created')), stdout)
  t.equal(stderr, '')
})
