/**
 * What each value of the chart does to the rendered objects: the workload kind, spread, rollouts,
 * memcached's flags, the exporter and what uses it, TLS, authentication and the NetworkPolicy.
 * The golden renders (test/golden/features) show whole objects; these name each behaviour.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { evaluatePod } from '../operator/sandbox/admission/podsecurity.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor } from './support/operator.ts'

const chart = loadChart()
type Container = { name: string; image: string; args: string[]; ports: { name: string; containerPort: number }[]; env?: { name: string; value: string }[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[]; lifecycle?: unknown; resources: { requests: Record<string, string>; limits: Record<string, string> }; securityContext: unknown }
type PodSpec = { containers: Container[]; volumes?: { name: string; secret?: { secretName: string; items?: unknown }; configMap?: { name: string } }[]; affinity?: unknown; topologySpreadConstraints?: unknown; imagePullSecrets?: unknown; terminationGracePeriodSeconds?: number; securityContext: Record<string, unknown> }
type Workload = RenderedObject & { spec: Record<string, unknown> & { template: { metadata: Record<string, unknown>; spec: PodSpec } } }

const render = (spec: Record<string, unknown>, namespace = 'team') => renderInstance(chart, { name: 'cache', namespace, spec: { size: 3, ...spec } }).objects
const find = <T = RenderedObject & { spec: Record<string, unknown> }>(objects: RenderedObject[], kind: string): T | undefined => objects.find((o) => o.kind === kind) as T | undefined
const workload = (objects: RenderedObject[]): Workload => (find<Workload>(objects, 'Deployment') ?? find<Workload>(objects, 'StatefulSet'))!
const container = (objects: RenderedObject[], name: string): Container | undefined => workload(objects).spec.template.spec.containers.find((c) => c.name === name)
const kinds = (objects: RenderedObject[]) => objects.map((o) => o.kind)

t.test('by default: a Deployment, memcached alone in its pod, soft anti-affinity over nodes and spread over zones, nothing new', async (t) => {
  const objects = render({})
  t.same(kinds(objects), ['Service', 'Deployment', 'PodDisruptionBudget'])
  const pod = workload(objects).spec.template.spec
  t.same(pod.containers.map((c) => c.name), ['memcached'])
  t.same(pod.containers[0]?.args, ['-p', '11211', '-m', '64', '-c', '1024'], 'no flag beyond the classic ones')
  t.same(pod.affinity, { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } }, topologyKey: 'kubernetes.io/hostname' } }] } }, 'weight 100: no other workload\'s preference outweighs it')
  t.same(pod.topologySpreadConstraints, [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } } }], 'zones by skew, never a Pending pod')
  t.notOk('volumes' in pod || 'imagePullSecrets' in pod || 'terminationGracePeriodSeconds' in pod)
  t.notOk('lifecycle' in pod.containers[0]!)
  t.notOk('minReadySeconds' in workload(objects).spec || 'strategy' in workload(objects).spec)
  t.same(find(objects, 'PodDisruptionBudget')?.spec, { maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow', selector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } } }, 'a crash-looping or Pending pod never blocks a drain')
  t.same(pod.containers[0]?.resources, { requests: { cpu: '50m', memory: '103Mi' }, limits: { memory: '103Mi' } }, 'memory: what memcached needs at most, as request and limit')
})

t.test('memory the spec does not give follows memoryMB, maxConnections and TLS (request = limit); memory it gives is kept', async (t) => {
  t.same(container(render({ memoryMB: 1024 }), 'memcached')?.resources, { requests: { cpu: '50m', memory: '1153Mi' }, limits: { memory: '1153Mi' } }, '1024 + 96 (1.5 times the hash table) + 1 (1024 connections) + 32')
  t.same(container(render({ memoryMB: 1024, maxConnections: 4096, tls: { enabled: true, secretName: 'mc-tls' } }), 'memcached')?.resources.limits, { memory: '1216Mi' }, '4096 TLS connections: 64Mi')
  t.same(container(render({ memoryMB: 577 }), 'memcached')?.resources.limits, { memory: '706Mi' }, 'just past a doubling of the hash table')
  t.same(container(render({ memoryMB: 256, resources: { requests: { memory: '1Gi' } } }), 'memcached')?.resources, { requests: { cpu: '50m', memory: '1Gi' }, limits: { memory: '1Gi' } }, 'never a limit below the request')
  t.same(container(render({ memoryMB: 256, resources: { requests: { cpu: '1' }, limits: { memory: '2Gi', cpu: '2' } } }), 'memcached')?.resources, { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi', cpu: '2' } }, 'a limit alone is the request too, as the API server defaults it')
  t.same(container(render({ resources: { requests: { cpu: '500m' }, limits: { cpu: '500m' } } }), 'memcached')?.resources, { requests: { cpu: '500m', memory: '103Mi' }, limits: { cpu: '500m', memory: '103Mi' } }, 'CPU requests equal to limits: a Guaranteed pod')
})

t.test('zone spread: hard refuses to skew, none renders nothing, and constraints of the spec replace the preset', async (t) => {
  const selector = { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } }
  t.same(workload(render({ zoneSpreadPreset: 'hard' })).spec.template.spec.topologySpreadConstraints, [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: selector }])
  t.notOk('topologySpreadConstraints' in workload(render({ zoneSpreadPreset: 'none' })).spec.template.spec)
  const own = [{ maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' }]
  t.same(workload(render({ topologySpreadConstraints: own })).spec.template.spec.topologySpreadConstraints, [{ ...own[0], labelSelector: selector }])
})

t.test('anti-affinity: hard requires one pod per node, none renders nothing, and an explicit affinity wins', async (t) => {
  const selector = { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } }
  t.same(workload(render({ podAntiAffinityPreset: 'hard' })).spec.template.spec.affinity, { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: selector, topologyKey: 'kubernetes.io/hostname' }] } })
  t.notOk('affinity' in workload(render({ podAntiAffinityPreset: 'none' })).spec.template.spec)
  const own = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['cache'] }] }] } } }
  t.same(workload(render({ podAntiAffinityPreset: 'hard', affinity: own })).spec.template.spec.affinity, own)
})

t.test('a StatefulSet: the same pod template, the headless Service as serviceName, Parallel, and the Service publishes unready pods', async (t) => {
  const deployment = render({ minReadySeconds: 5 })
  const objects = render({ workload: { kind: 'StatefulSet', updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } } }, minReadySeconds: 5 })
  t.same(kinds(objects), ['Service', 'StatefulSet', 'PodDisruptionBudget'])
  const sts = workload(objects)
  t.equal(sts.spec.serviceName, find(objects, 'Service')?.metadata.name)
  t.equal(sts.spec.podManagementPolicy, 'Parallel')
  t.same(sts.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { partition: 1 } })
  t.equal(sts.spec.minReadySeconds, 5)
  t.same(sts.spec.template, workload(deployment).spec.template, 'one pod template for both')
  t.equal(find(objects, 'Service')?.spec.publishNotReadyAddresses, true)
  t.notOk('publishNotReadyAddresses' in find(deployment, 'Service')!.spec, 'a Deployment\'s Service lists ready pods only')
  t.equal(workload(render({ workload: { kind: 'StatefulSet', podManagementPolicy: 'OrderedReady' } })).spec.podManagementPolicy, 'OrderedReady')
  t.same(workload(render({ workload: { strategy: { type: 'Recreate' } } })).spec.strategy, { type: 'Recreate' })
})

t.test('memcached flags: threads, item size, verbosity, in that order before extraArgs', async (t) => {
  t.same(container(render({ threads: 8, maxItemSize: '2m', verbosity: 2, extraArgs: ['-o', 'modern'] }), 'memcached')?.args, ['-p', '11211', '-m', '64', '-c', '1024', '-t', '8', '-I', '2m', '-vv', '-o', 'modern'])
  t.same(container(render({ verbosity: 1 }), 'memcached')?.args.slice(6), ['-v'])
})

t.test('graceful stop: a preStop exec of sleep (any Kubernetes version; the sleep action needs 1.30) and the grace period', async (t) => {
  const objects = render({ lifecycle: { preStopSleepSeconds: 15 }, terminationGracePeriodSeconds: 45 })
  t.same(container(objects, 'memcached')?.lifecycle, { preStop: { exec: { command: ['sleep', '15'] } } })
  t.equal(workload(objects).spec.template.spec.terminationGracePeriodSeconds, 45)
  t.same(workload(render({ imagePullSecrets: ['a', 'b'] })).spec.template.spec.imagePullSecrets, [{ name: 'a' }, { name: 'b' }])
})

t.test('metrics: the exporter sidecar (pinned image, restricted, port metrics 9150) and the Service port', async (t) => {
  const objects = render({ metrics: { enabled: true } })
  const exporter = container(objects, 'metrics')!
  t.equal(exporter.image, 'quay.io/prometheus/memcached-exporter:v0.16.0')
  t.same(exporter.args, ['--memcached.address=localhost:11211', '--web.listen-address=:9150'])
  t.same(exporter.ports, [{ name: 'metrics', containerPort: 9150, protocol: 'TCP' }])
  t.same(exporter.securityContext, container(objects, 'memcached')?.securityContext)
  t.same((find(objects, 'Service')?.spec.ports as { name: string }[]).map((p) => p.name), ['memcache', 'metrics'])
  const digest = `sha256:${'a'.repeat(64)}`
  t.equal(container(render({ metrics: { enabled: true, image: { digest } } }), 'metrics')?.image, `quay.io/prometheus/memcached-exporter@${digest}`, 'a digest pins it')
  t.equal(container(render({ metrics: { enabled: true, image: 'registry.example.com/exporter:1' } }), 'metrics')?.image, 'registry.example.com/exporter:1')
  t.same(kinds(objects), ['Service', 'Deployment', 'PodDisruptionBudget'], 'no ServiceMonitor, rule or dashboard unless asked for')
})

t.test('metrics: ServiceMonitor, PrometheusRule with the exporter\'s metric names, and a Grafana dashboard', async (t) => {
  const objects = render({ metrics: { enabled: true, serviceMonitor: { enabled: true, labels: { release: 'prom' } }, prometheusRule: { enabled: true }, dashboard: { enabled: true } } })
  const sm = find(objects, 'ServiceMonitor')!
  t.equal(sm.apiVersion, 'monitoring.coreos.com/v1')
  t.equal(sm.metadata.labels?.release, 'prom')
  t.same(sm.spec, { selector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } }, endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' }] })
  const rule = find(objects, 'PrometheusRule')!
  const rules = (rule.spec.groups as { rules: { alert: string; expr: string }[] }[])[0]!.rules
  t.same(rules.map((r) => r.alert), ['MemcachedDown', 'MemcachedPodsMissing', 'MemcachedConnectionLimitNear', 'MemcachedConnectionLimitReached', 'MemcachedConnectionsRejected', 'MemcachedOutOfMemory'], 'no alert on evictions: every full cache evicts')
  const used = new Set(rules.flatMap((r) => r.expr.match(/memcached_[a-z_]+/g) ?? []))
  t.same([...used].sort(), ['memcached_connections_listener_disabled_total', 'memcached_connections_rejected_total', 'memcached_current_connections', 'memcached_max_connections', 'memcached_slab_items_outofmemory_total', 'memcached_up'])
  const missing = rules.find((r) => r.alert === 'MemcachedPodsMissing') as unknown as { expr: string; for: string; labels: { severity: string } }
  t.equal(missing.expr, '(count(memcached_up{namespace="team", service="cache"} == 1) or vector(0)) < 3', 'a pod that is gone has no series: the pods up are counted against the size')
  const rejected = rules.find((r) => r.alert === 'MemcachedConnectionsRejected') as unknown as { for: string; labels: { severity: string } }
  t.same([rejected.for, rejected.labels.severity], ['5m', 'warning'], 'not paged on a single rejected connection')
  t.ok(rules.every((r) => r.expr.includes('namespace="team", service="cache"')), 'each alert looks at this instance only')
  // With extstore, one alert more, on the exporter's extstore_io_queue (exporter.go v0.16.0:
  // memcached_extstore_io_queue_depth; test/memcached-extstore.test.ts reads the stat from memcached).
  const withExtstore = (find(render({ extstore: { enabled: true }, metrics: { enabled: true, prometheusRule: { enabled: true } } }), 'PrometheusRule')!.spec.groups as { rules: { alert: string; expr: string; labels: { severity: string } }[] }[])[0]!.rules
  t.same(withExtstore.slice(rules.length).map((r) => [r.alert, r.expr.match(/memcached_[a-z_]+/g), r.labels.severity]), [['MemcachedExtstoreIOQueueHigh', ['memcached_extstore_io_queue_depth'], 'warning']])
  const own = [{ alert: 'Mine', expr: 'vector(1)' }]
  const replaced = find(render({ metrics: { enabled: true, prometheusRule: { enabled: true, rules: own } } }), 'PrometheusRule')!
  t.same((replaced.spec.groups as { rules: unknown }[])[0]!.rules, own, 'rules of the spec replace the defaults')
  const dash = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'cache-dashboard') as RenderedObject & { data: Record<string, string> }
  t.equal(dash.metadata.labels?.grafana_dashboard, '1')
  const json = JSON.parse(dash.data['memcached.json']!) as { title: string; panels: { targets: { expr: string }[] }[] }
  t.equal(json.title, 'memcached team/cache')
  t.ok(json.panels.length > 0 && json.panels.every((p) => p.targets.every((x) => /memcached_/.test(x.expr))))
})

t.test('TLS from a Secret: -Z with the chain and key, mounted read-only; the exporter speaks TLS over loopback', async (t) => {
  const objects = render({ tls: { enabled: true, secretName: 'mc-tls' }, metrics: { enabled: true } })
  const mc = container(objects, 'memcached')!
  t.same(mc.args.slice(6), ['-Z', '-o', 'ssl_chain_cert=/etc/memcached/tls/tls.crt,ssl_key=/etc/memcached/tls/tls.key'])
  t.same(mc.volumeMounts, [{ name: 'tls', mountPath: '/etc/memcached/tls', readOnly: true }])
  t.same(workload(objects).spec.template.spec.volumes, [{ name: 'tls', secret: { secretName: 'mc-tls' } }])
  t.same(container(objects, 'metrics')?.args.slice(2), ['--memcached.tls.enable', '--memcached.tls.cert-file=/etc/memcached/tls/tls.crt', '--memcached.tls.key-file=/etc/memcached/tls/tls.key', '--memcached.tls.insecure-skip-verify'], 'no CA without client certificates: loopback, unverified')
  t.same(container(objects, 'metrics')?.volumeMounts, mc.volumeMounts)
})

t.test('TLS with client certificates: ssl_ca_cert and ssl_verify_mode; the exporter presents the certificate and verifies the server', async (t) => {
  for (const [clientAuth, mode] of [['request', 1], ['require', 2], ['once', 3]] as const) {
    const objects = render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth }, metrics: { enabled: true } })
    t.equal(container(objects, 'memcached')?.args.at(-1), `ssl_chain_cert=/etc/memcached/tls/tls.crt,ssl_key=/etc/memcached/tls/tls.key,ssl_ca_cert=/etc/memcached/tls/ca.crt,ssl_verify_mode=${mode}`)
    t.same(container(objects, 'metrics')?.args.slice(-2), ['--memcached.tls.ca-file=/etc/memcached/tls/ca.crt', '--memcached.tls.server-name=cache.team.svc'])
  }
})

t.test('cert-manager: a Certificate for the Service and every pod name, labelled as an operator input', async (t) => {
  const objects = render({ workload: { kind: 'StatefulSet' }, tls: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca', kind: 'ClusterIssuer' } } } })
  const cert = find(objects, 'Certificate')!
  t.equal(cert.apiVersion, 'cert-manager.io/v1')
  t.equal(cert.spec.secretName, 'cache-tls')
  t.same(workload(objects).spec.template.spec.volumes, [{ name: 'tls', secret: { secretName: 'cache-tls' } }], 'the pods mount what cert-manager writes')
  t.same(cert.spec.secretTemplate, { labels: { 'cache.example.com/memcached-input': 'true' } })
  t.same(cert.spec.issuerRef, { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' })
  t.same(cert.spec.dnsNames, ['cache', 'cache.team', 'cache.team.svc', 'cache.team.svc.cluster.local', '*.cache.team.svc', '*.cache.team.svc.cluster.local'])
  t.equal(find(render({ clusterDomain: 'corp.example', tls: { enabled: true, secretName: 'own', certManager: { enabled: true, issuerRef: { name: 'ca' } } } }), 'Certificate')?.spec.secretName, 'own', 'or the Secret named')
  t.match(find(render({ clusterDomain: 'corp.example', tls: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca' } } } }), 'Certificate')?.spec.dnsNames, ['cache', 'cache.team', 'cache.team.svc', 'cache.team.svc.corp.example'])
})

t.test('auth: -Y with the Secret\'s key mounted read-only (reload.enabled false), or -S with a password database qualified by the pod\'s realm and a SASL configuration', async (t) => {
  const file = render({ auth: { enabled: true, secretName: 'users' }, reload: { enabled: false } })
  t.same(container(file, 'memcached')?.args.slice(6), ['-Y', '/etc/memcached/auth/passwords'])
  t.same(workload(file).spec.template.spec.volumes, [{ name: 'auth', secret: { secretName: 'users', items: [{ key: 'passwords', path: 'passwords' }] } }])
  t.same(container(file, 'memcached')?.volumeMounts, [{ name: 'auth', mountPath: '/etc/memcached/auth', readOnly: true }])
  t.notOk('initContainers' in workload(file).spec.template.spec, 'no init step for the auth file')
  const sasl = render({ auth: { enabled: true, mode: 'sasl', secretName: 'users', secretKey: 'db' } })
  t.same(container(sasl, 'memcached')?.args.slice(6), ['-S'])
  t.same(container(sasl, 'memcached')?.env, [{ name: 'MEMCACHED_SASL_PWDB', value: '/etc/memcached/sasl-db/db' }, { name: 'SASL_CONF_PATH', value: '/etc/memcached/sasl' }])
  const conf = sasl.find((o) => o.kind === 'ConfigMap') as RenderedObject & { data: Record<string, string> }
  t.equal(conf.metadata.name, 'cache-sasl')
  t.same(conf.data, { 'memcached.conf': 'mech_list: plain\n' })
  const pod = workload(sasl).spec.template.spec as PodSpec & { initContainers: Container[] & { command: string[] }[] }
  t.same(pod.volumes, [{ name: 'auth', secret: { secretName: 'users', items: [{ key: 'db', path: 'db' }] } }, { name: 'sasl', configMap: { name: 'cache-sasl' } }, { name: 'sasl-db', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }])
  t.same(container(sasl, 'memcached')?.volumeMounts?.map((m) => m.name), ['sasl', 'sasl-db'], 'memcached sees only the qualified lines')
  const init = pod.initContainers[0] as unknown as Container & { command: string[] }
  t.equal(init.image, container(sasl, 'memcached')?.image, 'the init step runs in the memcached image (its sh and sed)')
  t.same(init.command, ['sh', '-c', 'umask 077 && sed "s/^\\([^:@]*\\):/\\1@$(cat /proc/sys/kernel/hostname):/" /etc/memcached/auth/db > /etc/memcached/sasl-db/db'])
  t.same(init.securityContext, container(sasl, 'memcached')?.securityContext)
  t.notOk(file.some((o) => o.kind === 'ConfigMap'), 'no SASL configuration for the auth file')
})

t.test('extstore: ext_path on an emptyDir of the file\'s size plus 64Mi, writable by memcached alone, and 28Mi more memory', async (t) => {
  const objects = render({ extstore: { enabled: true, sizeMB: 4096 }, tls: { enabled: true, secretName: 'mc-tls' }, metrics: { enabled: true } })
  const mc = container(objects, 'memcached')!
  t.same(mc.args.slice(-2), ['-o', 'ext_path=/var/lib/memcached/extstore:4096M'])
  t.same(mc.volumeMounts?.at(-1), { name: 'extstore', mountPath: '/var/lib/memcached' })
  t.same(workload(objects).spec.template.spec.volumes?.at(-1), { name: 'extstore', emptyDir: { sizeLimit: '4160Mi' } })
  t.same(container(objects, 'metrics')?.volumeMounts?.map((m) => m.name), ['tls'], 'not the exporter')
  t.same(container(render({ extstore: { enabled: true } }), 'memcached')?.resources.limits, { memory: '131Mi' }, '103Mi + 7 write buffers of 4 MB')
  t.same(container(render({ extstore: { enabled: true, writeBufferMB: 8, pageSizeMB: 32 } }), 'memcached')?.resources.limits, { memory: '159Mi' }, '103Mi + 7 write buffers of 8 MB')
  t.notOk(container(render({}), 'memcached')?.args.includes('-o'), 'off by default')
})

t.test('NetworkPolicy: ingress only, on memcached\'s port from the sources given (any when none), and on the metrics port', async (t) => {
  const open = find(render({ networkPolicy: { enabled: true } }), 'NetworkPolicy')!
  t.same(open.spec, { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } }, policyTypes: ['Ingress'], ingress: [{ ports: [{ protocol: 'TCP', port: 11211 }] }] })
  const web = [{ podSelector: { matchLabels: { app: 'web' } } }, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }]
  const prom = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]
  const closed = find(render({ port: 11311, metrics: { enabled: true }, networkPolicy: { enabled: true, allowedSources: web, metricsAllowedSources: prom } }), 'NetworkPolicy')!
  t.same(closed.spec.ingress, [{ from: web, ports: [{ protocol: 'TCP', port: 11311 }] }, { from: prom, ports: [{ protocol: 'TCP', port: 9150 }] }])
  t.notOk(find(render({}), 'NetworkPolicy'), 'none by default')
})

t.test('every feature render passes Pod Security "restricted" (the sandbox\'s admission checks, at 1.34)', async (t) => {
  // The chart's example values (ci/), one feature each.
  const dir = join(import.meta.dirname, '..', 'charts', 'memcached', 'ci')
  const files = readdirSync(dir).filter((f) => f.endsWith('-values.yaml'))
  t.ok(files.length >= 8)
  for (const f of files) {
    const values = YAML.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>
    const w = workload(render(values))
    t.equal(evaluatePod({ level: 'restricted', minor: Infinity, version: 'latest' }, w.spec.template.metadata, w.spec.template.spec as unknown as Record<string, unknown>), '', f)
  }
})

t.test('through the API server: the generated CRD accepts every sample and feature spec and keeps all of it', async (t) => {
  const sandbox = await startSandbox({ installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox)
  t.teardown(() => client.close())
  const samples = join(import.meta.dirname, '..', 'kustomize', 'samples')
  const classic = (YAML.parse(readFileSync(join(samples, 'cache_v1alpha1_memcached.yaml'), 'utf8')) as { spec: Record<string, unknown> }).spec
  const specs: [string, Record<string, unknown>][] = readdirSync(samples)
    .filter((f) => f.startsWith('cache_'))
    .map((f) => [f, (YAML.parse(readFileSync(join(samples, f), 'utf8')) as { spec: Record<string, unknown> }).spec])
  const features = join(import.meta.dirname, '..', 'charts', 'memcached', 'ci')
  for (const f of readdirSync(features).filter((x) => x.endsWith('-values.yaml'))) specs.push([f, { ...classic, ...(YAML.parse(readFileSync(join(features, f), 'utf8')) as Record<string, unknown>) }])
  t.ok(specs.some(([f]) => f === 'cache_v1alpha1_memcached_production.yaml'))
  let i = 0
  for (const [f, spec] of specs) {
    const created = await client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: `cr-${i++}`, namespace: 'default' }, spec })
    t.same(created.spec, spec, `${f}: nothing pruned or refused`)
  }
})
