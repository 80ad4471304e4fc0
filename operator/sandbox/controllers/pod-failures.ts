/**
 * Pods that fail as a kubelet reports them, for tests of health gates: a container whose image
 * matches a rule's pattern does not become ready, in one of three ways —
 *
 * - `ImagePull`: the image cannot be pulled; the container waits `ErrImagePull`, then
 *   `ImagePullBackOff` (kubelet pkg/kubelet/images/image_manager.go, `ErrImagePullBackOff`), the pod
 *   stays Pending;
 * - `CrashLoop`: the container exits 1 each time it starts; the pod is Running, the container waits
 *   `CrashLoopBackOff` with its last state terminated (`Error`, exit code 1) and a `restartCount`
 *   that grows with the kubelet's back-off, doubled each restart up to a cap (pkg/kubelet/kuberuntime
 *   `MaxContainerBackOff` 5 min; here from the sandbox's pod-ready delay, so tests see it grow);
 * - `NeverReady`: the container runs and its readiness probe never passes; the pod is Running,
 *   not Ready (`ContainersNotReady`).
 *
 * The Deployment, ReplicaSet and StatefulSet controllers then see no ready pod, as with a real bad
 * image: availableReplicas stays short and a Deployment reports ProgressDeadlineExceeded at its
 * deadline (deployment.ts). Rules are set at start (`startSandbox({ podFailures })`) or later
 * (`sandbox.podFailures.set(…)`, `PUT /sandbox/v1/pod-failures`); a pod is judged when the kubelet
 * starts it, so a rule changed later applies to pods started after.
 */
import type { JsonObject, KubeObject } from '../types.ts'

/** How a matching container fails. */
export type PodFailureMode = 'ImagePull' | 'CrashLoop' | 'NeverReady'

/** One rule: containers whose image matches `image` (a regular expression, unanchored) fail as `failure` says. */
export interface PodFailureRule {
  image: string
  failure: PodFailureMode
}

const MODES: readonly PodFailureMode[] = ['ImagePull', 'CrashLoop', 'NeverReady']

/** Thrown for a rule that is not one. */
export class PodFailureRuleError extends Error {
  override name = 'PodFailureRuleError'
}

/**
 * Checks rules given as JSON (`[{ "image": "…", "failure": "CrashLoop" }]`).
 * @throws PodFailureRuleError naming the rule and the field
 */
export function parsePodFailures(input: unknown): PodFailureRule[] {
  if (!Array.isArray(input)) throw new PodFailureRuleError('pod failures: must be a list of {image, failure}')
  return input.map((r, i) => {
    const rule = (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>
    if (typeof rule.image !== 'string' || rule.image === '') throw new PodFailureRuleError(`pod failures[${i}].image: must be a non-empty regular expression`)
    try {
      new RegExp(rule.image)
    } catch (err) {
      throw new PodFailureRuleError(`pod failures[${i}].image: ${err instanceof Error ? err.message : String(err)}`)
    }
    if (!MODES.includes(rule.failure as PodFailureMode)) throw new PodFailureRuleError(`pod failures[${i}].failure: must be one of ${MODES.join(', ')}, not ${JSON.stringify(rule.failure)}`)
    return { image: rule.image, failure: rule.failure as PodFailureMode }
  })
}

/** The rules in force (one per sandbox). */
export class PodFailures {
  #rules: { rule: PodFailureRule; re: RegExp }[] = []

  constructor(rules: readonly PodFailureRule[] = []) {
    this.set(rules)
  }

  /** Replaces the rules. @throws PodFailureRuleError */
  set(rules: unknown): PodFailureRule[] {
    const parsed = parsePodFailures(rules)
    this.#rules = parsed.map((rule) => ({ rule, re: new RegExp(rule.image) }))
    return this.get()
  }

  get(): PodFailureRule[] {
    return this.#rules.map((r) => ({ ...r.rule }))
  }

  /** How each container of a pod fails (by container name), for those that match a rule. */
  failuresOf(pod: KubeObject): Map<string, PodFailureMode> {
    const out = new Map<string, PodFailureMode>()
    if (this.#rules.length === 0) return out
    for (const c of containersOf(pod)) {
      const image = String(c['image'] ?? '')
      const hit = this.#rules.find((r) => r.re.test(image))
      if (hit) out.set(String(c['name'] ?? ''), hit.rule.failure)
    }
    return out
  }
}

function containersOf(pod: KubeObject): JsonObject[] {
  const spec = (pod['spec'] ?? {}) as JsonObject
  return (Array.isArray(spec['containers']) ? spec['containers'] : []).filter((c): c is JsonObject => typeof c === 'object' && c !== null && !Array.isArray(c))
}

/** Whether the kubelet reports a failing pod again after `attempt` reports: a crash loop restarts for ever, a failed pull turns ImagePullBackOff once. */
export function reportsAgain(failures: ReadonlyMap<string, PodFailureMode>, attempt: number): boolean {
  const modes = [...failures.values()]
  return modes.includes('CrashLoop') || (modes.includes('ImagePull') && attempt < 2)
}

/** The kubelet's back-off before the `restarts`-th restart: `baseMs` doubled each time, at most `capMs`. */
export function crashBackOffMs(restarts: number, baseMs: number, capMs = 300_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, restarts - 1))
}

/**
 * The status the kubelet reports for a pod with failing containers (`failures` by container name;
 * the others run and are ready) at its `attempt`-th try (1 first): a crash-looping container has
 * restarted `attempt` times (its last run ended `now`), a pull that failed once says ErrImagePull,
 * then ImagePullBackOff. `time` is when the pod started (its conditions, startTime).
 * Without the node's addresses (the kubelet adds them).
 */
export function failingStatus(pod: KubeObject, failures: ReadonlyMap<string, PodFailureMode>, podIP: string, time: string, attempt: number, backOffMs: number, now: string = time): JsonObject {
  const containers = containersOf(pod)
  const cond = (type: string, status: string, extra: JsonObject = {}) => ({ type, status, lastProbeTime: null, lastTransitionTime: time, ...extra })
  const pulling = [...failures.values()].includes('ImagePull')
  const unready = containers.filter((c) => failures.has(String(c['name'] ?? ''))).map((c) => String(c['name'] ?? ''))
  const notReady = { reason: 'ContainersNotReady', message: `containers with unready status: [${unready.join(' ')}]` }
  const statuses = containers.map((c) => {
    const name = String(c['name'] ?? '')
    const image = String(c['image'] ?? '')
    const base = { name, image, imageID: '', lastState: {} as JsonObject, restartCount: 0, ready: false, started: false }
    const containerID = `containerd://${(pod.metadata.uid ?? '').replaceAll('-', '')}${name}`.slice(0, 77)
    switch (failures.get(name)) {
      case 'ImagePull':
        // image_manager.go: the first failure is ErrImagePull with the runtime's message, the ones after ImagePullBackOff.
        return attempt <= 1
          ? { ...base, state: { waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${image}": failed to resolve reference "${image}": not found` } } }
          : { ...base, state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` } } }
      case 'CrashLoop':
        return {
          ...base,
          containerID,
          restartCount: attempt,
          state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off ${Math.round(backOffMs / 1000)}s restarting failed container=${name} pod=${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}(${pod.metadata.uid ?? ''})` } },
          lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: now, finishedAt: now, containerID } },
        }
      case 'NeverReady':
        return { ...base, containerID, started: true, state: { running: { startedAt: time } } }
      default:
        return { ...base, containerID, ready: true, started: true, state: { running: { startedAt: time } } }
    }
  })
  return {
    phase: pulling ? 'Pending' : 'Running',
    conditions: [cond('PodReadyToStartContainers', 'True'), cond('Initialized', 'True'), cond('Ready', 'False', notReady), cond('ContainersReady', 'False', notReady), cond('PodScheduled', 'True')],
    // The pod's sandbox and network are up (PodReadyToStartContainers) before any image is pulled.
    podIP,
    podIPs: [{ ip: podIP }],
    startTime: time,
    containerStatuses: statuses,
    qosClass: ((pod['status'] ?? {}) as JsonObject)['qosClass'] ?? 'BestEffort',
  } as unknown as JsonObject
}
