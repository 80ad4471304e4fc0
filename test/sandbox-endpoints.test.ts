// EndpointSlices and Endpoints for Services, as the EndpointSlice controller (k8s.io/endpointslice
// reconciler.go, utils.go podToEndpoint, getEndpointPorts) and the Endpoints controller
// (pkg/controller/endpoint/endpoints_controller.go) keep them; served as discovery.k8s.io/v1 and v1.
import t from 'tap'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'
import { kubectlFor } from './support/kubectl.ts'

const pod = (name: string, labels: Obj, extra: Obj = {}): Obj => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, labels },
  spec: { containers: [{ name: 'c', image: 'memcached:1.6', ports: [{ name: 'memcache', containerPort: 11211 }] }], ...extra },
})
const service = (name: string, spec: Obj, labels: Obj = {}): Obj => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels }, spec })
const ready = (p: Obj) => p.status?.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True')

t.test('reconciler.go: a Service\'s slice lists its pods with their IPs, conditions, targetRef, nodeName; ports resolved by name; labels and owner as upstream', async (t) => {
  // The kubelet reports a pod Ready again after the ready delay: long enough to see it not ready below.
  const { call, list } = await controllersBed(t, { podReadyDelayMs: 400 })
  for (const n of ['a', 'b']) await call({ verb: 'create', resource: 'pods', namespace: 'default', body: pod(n, { app: 'mc' }) })
  await call({ verb: 'create', resource: 'pods', namespace: 'default', body: pod('other', { app: 'x' }) })
  const svc = (await call({ verb: 'create', resource: 'services', namespace: 'default', body: service('mc', { selector: { app: 'mc' }, ports: [{ name: 'memcache', port: 11211, targetPort: 'memcache' }] }, { team: 'cache' }) })).body as Obj
  const slice = await until('a slice with both pods ready', async () => {
    const s = (await list('endpointslices', 'discovery.k8s.io')).find((x) => x.metadata.labels['kubernetes.io/service-name'] === 'mc')
    return s?.endpoints?.length === 2 && s.endpoints.every((e: Obj) => e.conditions.ready) ? s : undefined
  })
  const pods = (await list('pods')).filter((p) => p.metadata.labels.app === 'mc').sort((x, y) => (x.metadata.name < y.metadata.name ? -1 : 1))
  t.match(slice, {
    addressType: 'IPv4',
    metadata: {
      generateName: 'mc-', name: /^mc-[a-z0-9]{5}$/,
      labels: { team: 'cache', 'kubernetes.io/service-name': 'mc', 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'mc', uid: svc.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    ports: [{ name: 'memcache', port: 11211, protocol: 'TCP' }],
  })
  t.notOk('service.kubernetes.io/headless' in slice.metadata.labels)
  t.same(slice.endpoints.map((e: Obj) => e.addresses[0]).sort(), pods.map((p) => p.status.podIP).sort())
  t.match(slice.endpoints.find((e: Obj) => e.targetRef.name === 'a'), { conditions: { ready: true, serving: true, terminating: false }, nodeName: 'sandbox-node', targetRef: { kind: 'Pod', namespace: 'default', name: 'a', uid: pods[0]?.metadata.uid } })
  const ep = await until('the Endpoints', async () => (await list('endpoints')).find((e) => e.metadata.name === 'mc' && e.subsets?.[0]?.addresses?.length === 2))
  t.match(ep, { metadata: { labels: { team: 'cache', 'endpoints.kubernetes.io/managed-by': 'endpoint-controller' }, annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': /Z$/ } }, subsets: [{ ports: [{ name: 'memcache', port: 11211, protocol: 'TCP' }] }] })
  t.match(ep.subsets[0].addresses[0], { ip: /^10\.244\./, nodeName: 'sandbox-node', targetRef: { kind: 'Pod' } })
  t.equal((await call({ verb: 'get', resource: 'endpoints', namespace: 'default', name: 'mc' })).headers?.['Warning'], '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"', 'v1 Endpoints requests are warned about (KEP-4974)')

  // Readiness lost: the endpoint stays, not ready (slice); the address moves to notReadyAddresses (Endpoints).
  const a = pods[0] as Obj
  const conditions = a.status.conditions.map((c: Obj) => (c.type === 'Ready' ? { ...c, status: 'False' } : c))
  await call({ verb: 'patch', resource: 'pods', namespace: 'default', name: 'a', subresource: 'status', contentType: 'application/merge-patch+json', body: { status: { conditions } } })
  const after = await until('a not ready in the slice', async () => (await list('endpointslices', 'discovery.k8s.io')).find((x) => x.endpoints?.some((e: Obj) => e.targetRef.name === 'a' && e.conditions.ready === false)))
  t.match(after.endpoints.find((e: Obj) => e.targetRef.name === 'a').conditions, { ready: false, serving: false, terminating: false })
  const ep2 = await until('a under notReadyAddresses', async () => (await list('endpoints')).find((e) => e.metadata.name === 'mc' && e.subsets?.[0]?.notReadyAddresses?.length === 1))
  t.equal(ep2.subsets[0].addresses.length, 1)

  // The pod goes: so does its endpoint.
  await call({ verb: 'delete', resource: 'pods', namespace: 'default', name: 'a' })
  await until('one endpoint left', async () => (await list('endpointslices', 'discovery.k8s.io')).find((x) => x.endpoints?.length === 1))
  // The Service goes: its slices and Endpoints too.
  await call({ verb: 'delete', resource: 'services', namespace: 'default', name: 'mc' })
  await until('slices and endpoints gone', async () => (await list('endpointslices', 'discovery.k8s.io')).length === 0 && (await list('endpoints')).length === 0)
})

t.test('podToEndpoint / endpoints_controller.go: headless label, hostname with a matching subdomain, publishNotReadyAddresses; Services without a selector get nothing', async (t) => {
  const { call, list } = await controllersBed(t, { podReadyDelayMs: 60_000 })
  await call({ verb: 'create', resource: 'pods', namespace: 'default', body: pod('m-0', { app: 'h' }, { hostname: 'm-0', subdomain: 'h' }) })
  await call({ verb: 'create', resource: 'services', namespace: 'default', body: service('h', { clusterIP: 'None', selector: { app: 'h' }, publishNotReadyAddresses: true, ports: [{ port: 11211 }] }) })
  await call({ verb: 'create', resource: 'services', namespace: 'default', body: service('manual', { ports: [{ port: 80 }] }) })
  // Not ready yet (the kubelet waits a minute): give it an IP by hand, as a CNI would.
  await until('bound', async () => (await list('pods'))[0]?.spec.nodeName === 'sandbox-node')
  await call({ verb: 'patch', resource: 'pods', namespace: 'default', name: 'm-0', subresource: 'status', contentType: 'application/merge-patch+json', body: { status: { phase: 'Pending', podIP: '10.244.9.9', podIPs: [{ ip: '10.244.9.9' }] } } })
  const slice = await until('the headless slice', async () => (await list('endpointslices', 'discovery.k8s.io')).find((x) => x.metadata.labels['kubernetes.io/service-name'] === 'h' && x.endpoints?.length === 1))
  t.equal(slice.metadata.labels['service.kubernetes.io/headless'], '')
  t.match(slice.endpoints[0], { addresses: ['10.244.9.9'], hostname: 'm-0', conditions: { ready: true, serving: false, terminating: false } })
  t.match(slice.ports, [{ name: '', port: 11211, protocol: 'TCP' }])
  const ep = await until('the Endpoints', async () => (await list('endpoints')).find((e) => e.metadata.name === 'h' && e.subsets))
  t.match(ep.metadata.labels, { 'service.kubernetes.io/headless': '' })
  t.match(ep.subsets, [{ addresses: [{ ip: '10.244.9.9', hostname: 'm-0' }], ports: [{ port: 11211, protocol: 'TCP' }] }])
  t.notOk(ep.subsets[0].notReadyAddresses)
  t.notOk((await list('endpointslices', 'discovery.k8s.io')).some((x) => x.metadata.labels['kubernetes.io/service-name'] === 'manual'), 'no slice for a Service without a selector')
  t.notOk((await list('endpoints')).some((e) => e.metadata.name === 'manual'), 'nor an Endpoints')
})

t.test('real kubectl: get endpointslices -l kubernetes.io/service-name=X lists the pods; get endpoints X', async (t) => {
  const { sb, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  const kubectl = kubectlFor(sb.kubeconfigPath)
  await kubectl(['create', 'deployment', 'cache', '--image=memcached:1.6.38', '--replicas=3', '--port=11211'])
  await kubectl(['expose', 'deployment', 'cache', '--port=11211', '--cluster-ip=None'])
  await until('3 ready pods', async () => (await list('pods')).filter(ready).length === 3)
  const ips = (await list('pods')).map((p) => p.status.podIP as string).sort()
  await until('3 endpoints', async () => (await list('endpoints')).find((e) => e.subsets?.[0]?.addresses?.length === 3))
  await until('3 slice endpoints', async () => (await list('endpointslices', 'discovery.k8s.io')).find((s) => s.endpoints?.length === 3))
  const slices = await kubectl(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=cache'])
  t.match(slices, /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE\ncache-[a-z0-9]{5}\s+IPv4\s+11211\s+(\S+)\s+\S+\n$/)
  t.same((/IPv4\s+11211\s+(\S+)/.exec(slices)?.[1] ?? '').split(',').sort(), ips)
  const eps = await kubectl(['get', 'endpoints', 'cache'])
  t.match(eps, /^NAME\s+ENDPOINTS\s+AGE\ncache\s+(\S+)\s+\S+\n$/)
  t.same((/cache\s+(\S+)/.exec(eps)?.[1] ?? '').split(',').sort(), ips.map((ip) => `${ip}:11211`).sort())
  t.match(await kubectl(['get', 'endpointslices', '-o', 'jsonpath={.items[0].metadata.labels.service\\.kubernetes\\.io/headless}{"|"}{.items[0].endpoints[*].targetRef.kind}']), /^\|Pod Pod Pod$/)
  // The slices are the Service's dependents: a foreground delete waits for the collector to remove them.
  await kubectl(['delete', 'service', 'cache', '--cascade=foreground'])
  t.same(await list('endpointslices', 'discovery.k8s.io'), [], 'the slices went with their Service')
  await until('the Endpoints gone', async () => (await list('endpoints')).length === 0)
})
