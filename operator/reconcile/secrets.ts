/**
 * The operator's side of Secret inputs: a cache that holds, of each Secret labelled
 * `cache.example.com/memcached-input=true`, its identity and the checksum of its content — never
 * the content (the informer's transform drops it before anything is cached, as controller-runtime's
 * cache transforms do) — and the record of which CRs referred to which Secrets, so that a change
 * of a Secret re-renders exactly those CRs.
 */
import { isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import { certificateSummary, type CertificateSummary } from '../memcached/certificate.ts'
import { INPUT_LABEL, INPUT_SELECTOR, secretChecksum, secretKeys, type SecretContent, type SecretSource } from '../render/secrets.ts'

/** A Secret as the operator caches it: metadata, the checksum of its content and its key names. */
export interface SecretSummary extends KubeObject {
  checksum: string
  /** The names of its keys (never their values), so that a render can say which key the pods miss. */
  keys: string[]
  /** Of a Secret with a tls.crt: its certificate's fingerprint, expiry and whether memcached could load it (never the key). */
  tls?: CertificateSummary
}

/** The informer's transform: name, namespace, uid, resourceVersion, labels, the checksum, the key names and the certificate's summary; no data, no annotations. */
export function secretSummary(secret: KubeObject): SecretSummary {
  const { name, namespace, uid, resourceVersion, labels } = secret.metadata
  const tls = certificateSummary(secret as unknown as SecretContent)
  return {
    apiVersion: secret.apiVersion,
    kind: secret.kind,
    metadata: { name, namespace, uid, resourceVersion, ...(labels ? { labels } : {}) },
    checksum: secretChecksum(secret as unknown as SecretContent),
    keys: secretKeys(secret as unknown as SecretContent),
    ...(tls ? { tls } : {}),
  }
}

/** A render's {@link SecretSource} over the Secret cache. */
export function cachedSecrets(cache: { get(namespace: string | undefined, name: string): SecretSummary | undefined }): SecretSource {
  // A summary cached before it had key names (none now) checks nothing.
  return { checksum: (namespace, name) => cache.get(namespace, name)?.checksum, keys: (namespace, name) => cache.get(namespace, name)?.keys }
}

/**
 * Which CRs referred to which Secrets in their last render (`namespace/name` both): the index a
 * Secret's event is mapped through. A CR's entry is replaced by each render, and dropped with the CR.
 */
export class SecretReferences {
  #byCr = new Map<string, ReadonlySet<string>>()
  #bySecret = new Map<string, Set<string>>()

  /** Records the Secrets `cr`'s render referred to (replacing what it referred to before). */
  set(cr: string, secrets: Iterable<string>): void {
    this.forget(cr)
    const set = new Set(secrets)
    if (set.size === 0) return
    this.#byCr.set(cr, set)
    for (const s of set) {
      const crs = this.#bySecret.get(s) ?? new Set()
      crs.add(cr)
      this.#bySecret.set(s, crs)
    }
  }

  /** Forgets a CR (deleted). */
  forget(cr: string): void {
    for (const s of this.#byCr.get(cr) ?? []) {
      const crs = this.#bySecret.get(s)
      crs?.delete(cr)
      if (crs?.size === 0) this.#bySecret.delete(s)
    }
    this.#byCr.delete(cr)
  }

  /** The CRs whose last render referred to `secret`. */
  referrers(secret: string): string[] {
    return [...(this.#bySecret.get(secret) ?? [])]
  }
}

/**
 * Why a Secret is not in the cache, for the SecretNotFound message: one GET (on this failing path
 * only) tells a Secret that does not exist from one that lacks the label. The GET's answer carries
 * the Secret's data: only its labels are read, and nothing of it is kept.
 */
export async function whySecretMissing(client: KubeClient, key: string): Promise<string> {
  const { namespace, name } = splitSecretKey(key)
  let secret: KubeObject | undefined
  try {
    secret = await client.get({ apiVersion: 'v1', kind: 'Secret', namespace, name })
  } catch (err) {
    if (!isNotFound(err)) return `Secret ${key} is not among the Secrets labelled ${INPUT_SELECTOR} that the operator watches, and reading it failed: ${err instanceof Error ? err.message : String(err)}`
  }
  return unusableSecret(key, secret) ?? `Secret ${key} exists but is not in the operator's cache yet`
}

/** The ClusterRole a namespace binds to let the operator read its input Secrets (kustomize/rbac/input_secrets_role.yaml). */
export const INPUT_SECRETS_ROLE = 'memcached-operator-input-secrets'

/**
 * The SecretNotFound message when the operator may not list the Secrets of the CR's namespace
 * (`refusal`: the server's message), or undefined when it may.
 */
export function secretsForbidden(key: string, refusal: string | undefined): string | undefined {
  if (refusal === undefined) return undefined
  const { namespace } = splitSecretKey(key)
  return `Secret ${key} cannot be read: the operator may not read Secrets in namespace ${namespace} (${refusal}); grant it there with a RoleBinding to the ClusterRole ${INPUT_SECRETS_ROLE}: kubectl create rolebinding ${INPUT_SECRETS_ROLE} -n ${namespace} --clusterrole=${INPUT_SECRETS_ROLE} --serviceaccount=<the operator's namespace>:<its ServiceAccount>`
}

/** `namespace/name` apart. */
export function splitSecretKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/')
  return { namespace: key.slice(0, i), name: key.slice(i + 1) }
}

/**
 * Why the operator cannot use the Secret `key` as read from the server (undefined: it does not
 * exist), or undefined when it can (it carries the label).
 */
export function unusableSecret(key: string, secret: KubeObject | undefined): string | undefined {
  if (!secret) return `Secret ${key} does not exist (the chart refers to it; create it with the label ${INPUT_SELECTOR})`
  if (secret.metadata.labels?.[INPUT_LABEL] === 'true') return undefined
  const { namespace, name } = splitSecretKey(key)
  return `Secret ${key} exists but lacks the label ${INPUT_SELECTOR}, without which the operator does not see it: kubectl label secret ${name} -n ${namespace} ${INPUT_SELECTOR}`
}
