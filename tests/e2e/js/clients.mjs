// The official JS client (@kubernetes/client-node 1.4) against a real `kubera up`, driven by
// tests/e2e/test_clients_e2e.py:
//   node clients.mjs KUBECONFIG KINDS VERBS
// KINDS: [{apiVersion, kind, key}] (key: kubera's unique name of the kind, which names its
// entry in `lists`): each kind is listed through KubernetesObjectApi (which
// finds the resource through discovery and decodes the items into the client's own models),
// and the object `name` must be among its items. VERBS: [manifest]: for each, an informer on
// its kind in `default` sees the object the client creates, patches and deletes.
// Prints one JSON document: {lists: {Kind: {names, types}}, verbs: {Kind: [event, ...]},
// dra: {claim, slice, counters}}.
import * as k8s from '@kubernetes/client-node';

const [kubeconfig, kindsJson, verbsJson] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfig);
const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
const out = { lists: {}, verbs: {} };

for (const k of JSON.parse(kindsJson)) {
  const list = await objects.list(k.apiVersion, k.kind);
  out.lists[k.key ?? k.kind] = {
    names: list.items.map((i) => i.metadata.name),
    types: [...new Set(list.items.map((i) => i.constructor.name))],
  };
}

// KubernetesObjectApi names a kind's model `<Version><Kind>`; the core Event's is CoreV1Event
// (V1Event is not a model), so it decodes Events as plain objects: list them typed too.
const events = await kc.makeApiClient(k8s.CoreV1Api).listEventForAllNamespaces();
out.lists.Event.typed = [...new Set(events.items.map((i) => i.constructor.name))];

// The newer DRA fields (tests/e2e/kindobjects.py DRA_FIELDS): a claim and two slices read
// into the client's models and written out by their own attribute maps (a field a model
// lacks is dropped).
function modelJSON(v) {
  if (Array.isArray(v)) return v.map(modelJSON);
  if (v instanceof Date) return v.toISOString();
  if (v && typeof v === 'object') {
    const map = v.constructor?.getAttributeTypeMap?.();
    const json = {};
    if (map) {
      for (const a of map) if (v[a.name] !== undefined) json[a.baseName] = modelJSON(v[a.name]);
    } else {
      for (const [key, x] of Object.entries(v)) json[key] = modelJSON(x);
    }
    return json;
  }
  return v;
}

out.dra = {};
for (const [key, kind, name, namespace] of [
  ['claim', 'ResourceClaim', 'cl-resourceclaim', 'default'],
  ['slice', 'ResourceSlice', 'cl-resourceslice', undefined],
  ['counters', 'ResourceSlice', 'cl-resourceslice-counters', undefined],
]) {
  const obj = await objects.read({ apiVersion: 'resource.k8s.io/v1', kind, metadata: { name, namespace } });
  out.dra[key] = modelJSON(obj);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(check, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

for (const body of JSON.parse(verbsJson)) {
  const { apiVersion, kind } = body;
  const { name, namespace } = body.metadata;
  const resource = (await objects.resource(apiVersion, kind)).name;
  const root = apiVersion.includes('/') ? 'apis' : 'api';
  const path = `/${root}/${apiVersion}/namespaces/${namespace}/${resource}`;
  const seen = [];
  const errors = [];
  const informer = k8s.makeInformer(kc, path, () => objects.list(apiVersion, kind, namespace));
  for (const verb of [k8s.ADD, k8s.UPDATE, k8s.DELETE]) {
    informer.on(verb, (obj) => {
      if (obj.metadata.name === name) seen.push(verb);
    });
  }
  informer.on(k8s.ERROR, (err) => errors.push(String(err)));
  await informer.start();
  const created = await objects.create(body);
  if (!created.metadata.uid) throw new Error(`${kind} ${name}: created without a uid`);
  await until(() => seen.includes(k8s.ADD), `${kind} ${name} added`);
  const patched = await objects.patch(
    { apiVersion, kind, metadata: { name, namespace, labels: { patched: 'yes' } } },
    undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch,
  );
  if (patched.metadata.labels.patched !== 'yes') throw new Error(`${kind} ${name}: not patched`);
  await until(() => seen.includes(k8s.UPDATE), `${kind} ${name} updated`);
  await objects.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, 0);
  await until(() => seen.includes(k8s.DELETE), `${kind} ${name} deleted`);
  if (errors.length) throw new Error(`${kind} informer: ${errors.join('; ')}`);
  await informer.stop(); // aborts its watch request: not an error of the server's
  out.verbs[kind] = seen;
}

console.log(JSON.stringify(out));
