import t from 'tap'
import { defaultBuiltin, defaultPullPolicy } from '../operator/kube/builtin/defaults.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'

type Any = Record<string, any>

function deployment(spec: Any = {}, container: Any = { name: 'app', image: 'memcached:1.6' }): KubeObject {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { selector: {}, template: { metadata: {}, spec: { containers: [container] } }, ...spec } }
}

function defaulted(o: KubeObject): Any {
  defaultBuiltin(o)
  return o as unknown as Any
}

t.test('Deployment defaults', async (t) => {
  const d = defaulted(deployment())
  t.equal(d.spec.replicas, 1)
  t.same(d.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } })
  t.equal(d.spec.revisionHistoryLimit, 10)
  t.equal(d.spec.progressDeadlineSeconds, 600)
  const kept = defaulted(deployment({ replicas: 0, strategy: { type: 'Recreate' }, revisionHistoryLimit: 0, progressDeadlineSeconds: 5 }))
  t.equal(kept.spec.replicas, 0, 'explicit zero is kept')
  t.same(kept.spec.strategy, { type: 'Recreate' }, 'Recreate gets no rollingUpdate')
  t.equal(kept.spec.revisionHistoryLimit, 0)
  const ios = defaulted(deployment({ strategy: { rollingUpdate: { maxUnavailable: 1, maxSurge: '50%' } } }))
  t.same(ios.spec.strategy.rollingUpdate, { maxUnavailable: 1, maxSurge: '50%' }, 'int-or-string keeps its JSON type')
})

t.test('PodSpec and container defaults', async (t) => {
  const d = defaulted(deployment({}, {
    name: 'app',
    image: 'memcached:1.6',
    ports: [{ containerPort: 11211 }, { containerPort: 53, protocol: 'UDP' }],
    livenessProbe: { tcpSocket: { port: 11211 } },
    readinessProbe: { httpGet: { port: 'http' }, periodSeconds: 3 },
    startupProbe: { exec: { command: ['true'] } },
    resources: { limits: { cpu: '0.5', memory: '1024Mi' }, requests: { cpu: 1, memory: '1.5Gi', 'example.com/x': 'nonsense!' } },
    env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
  }))
  const ps = d.spec.template.spec
  t.same(
    { dnsPolicy: ps.dnsPolicy, restartPolicy: ps.restartPolicy, securityContext: ps.securityContext, terminationGracePeriodSeconds: ps.terminationGracePeriodSeconds, schedulerName: ps.schedulerName },
    { dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', securityContext: {}, terminationGracePeriodSeconds: 30, schedulerName: 'default-scheduler' },
  )
  const c = ps.containers[0]
  t.equal(c.imagePullPolicy, 'IfNotPresent')
  t.equal(c.terminationMessagePath, '/dev/termination-log')
  t.equal(c.terminationMessagePolicy, 'File')
  t.same(c.ports, [{ containerPort: 11211, protocol: 'TCP' }, { containerPort: 53, protocol: 'UDP' }])
  t.same(c.livenessProbe, { tcpSocket: { port: 11211 }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 })
  t.same(c.readinessProbe, { httpGet: { port: 'http', path: '/', scheme: 'HTTP' }, periodSeconds: 3, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 })
  t.equal(c.startupProbe.failureThreshold, 3)
  t.same(c.resources, { limits: { cpu: '500m', memory: '1Gi' }, requests: { cpu: '1', memory: '1536Mi', 'example.com/x': 'nonsense!' } }, 'quantities canonical; invalid ones left for validation')
  t.same(c.env[0].valueFrom.fieldRef, { fieldPath: 'metadata.name', apiVersion: 'v1' })
  const bare = defaulted(deployment())
  t.same(bare.spec.template.spec.containers[0].resources, {}, 'resources: {} always present')
})

t.test('imagePullPolicy follows the tag', async (t) => {
  const table: [unknown, string][] = [
    ['memcached', 'Always'],
    ['memcached:latest', 'Always'],
    ['memcached:1.6', 'IfNotPresent'],
    ['registry:5000/memcached', 'Always'],
    ['registry:5000/memcached:1.6', 'IfNotPresent'],
    ['memcached@sha256:abcd', 'IfNotPresent'],
    [undefined, 'IfNotPresent'],
  ]
  for (const [image, want] of table) t.equal(defaultPullPolicy(image), want, String(image))
  const explicit = defaulted(deployment({}, { name: 'a', image: 'x:latest', imagePullPolicy: 'Never' }))
  t.equal(explicit.spec.template.spec.containers[0].imagePullPolicy, 'Never')
})

t.test('ReplicaSet, Pod, PodTemplate, init containers, volumes', async (t) => {
  const rs = defaulted({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'r' }, spec: { template: { spec: { containers: [{ name: 'a', image: 'i' }] } } } })
  t.equal(rs.spec.replicas, 1)
  t.equal(rs.spec.template.spec.containers[0].imagePullPolicy, 'Always')
  const pod = defaulted({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: { initContainers: [{ name: 'i', image: 'i:1' }], containers: [{ name: 'a', image: 'a:1' }], volumes: [{ name: 'c', configMap: { name: 'cm' } }, { name: 's', secret: { secretName: 's', defaultMode: 256 } }, { name: 'e', emptyDir: {} }] },
  })
  t.equal(pod.spec.restartPolicy, 'Always')
  t.equal(pod.spec.initContainers[0].terminationMessagePolicy, 'File')
  t.same(pod.spec.volumes, [{ name: 'c', configMap: { name: 'cm', defaultMode: 420 } }, { name: 's', secret: { secretName: 's', defaultMode: 256 } }, { name: 'e', emptyDir: {} }])
  const pt = defaulted({ apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 't' }, template: { spec: { containers: [] } } } as unknown as KubeObject)
  t.equal(pt.template.spec.dnsPolicy, 'ClusterFirst')
})

t.test('Service defaults; clusterIP allocation through a hook', async (t) => {
  const svc = (spec: Any): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec })
  const plain = defaulted(svc({ ports: [{ port: 11211 }, { port: 80, targetPort: 'http', protocol: 'UDP' }] }))
  t.same(plain.spec, {
    ports: [{ port: 11211, protocol: 'TCP', targetPort: 11211 }, { port: 80, targetPort: 'http', protocol: 'UDP' }],
    type: 'ClusterIP',
    sessionAffinity: 'None',
    internalTrafficPolicy: 'Cluster',
    ipFamilyPolicy: 'SingleStack',
    ipFamilies: ['IPv4'],
  }, 'without the hook clusterIP is left to the caller')
  t.same(plain.status, { loadBalancer: {} })
  const headless = defaulted(svc({ clusterIP: 'None' }))
  t.same([headless.spec.clusterIP, headless.spec.clusterIPs], ['None', ['None']])
  const allocated = svc({})
  defaultBuiltin(allocated, { allocateClusterIP: () => '10.96.0.10' })
  t.same([(allocated.spec as Any).clusterIP, (allocated.spec as Any).clusterIPs], ['10.96.0.10', ['10.96.0.10']])
  const fixed = defaulted(svc({ clusterIP: '10.0.0.1' }))
  t.same(fixed.spec.clusterIPs, ['10.0.0.1'])
  const np = defaulted(svc({ type: 'NodePort' }))
  t.equal(np.spec.externalTrafficPolicy, 'Cluster')
  const lb = defaulted(svc({ type: 'LoadBalancer', sessionAffinity: 'ClientIP' }))
  t.same([lb.spec.externalTrafficPolicy, lb.spec.allocateLoadBalancerNodePorts, lb.spec.sessionAffinityConfig], ['Cluster', true, { clientIP: { timeoutSeconds: 10800 } }])
  const ext = defaulted(svc({ type: 'ExternalName', externalName: 'example.com' }))
  t.equal(ext.spec.ipFamilies, undefined, 'ExternalName gets no IP defaults')
})

t.test('other kinds', async (t) => {
  const secret = defaulted({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } })
  t.equal(secret.type, 'Opaque')
  const ns = defaulted({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } })
  t.same(ns.status, { phase: 'Active' })
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }
  const before = structuredClone(cm)
  defaultBuiltin(cm)
  t.same(cm, before, 'kinds without defaults are untouched')
  const cr = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm' }, spec: { resources: { limits: { cpu: '0.5' } } } }
  defaultBuiltin(cr)
  t.equal(cr.spec.resources.limits.cpu, '0.5', 'custom resources are not canonicalised')
})
