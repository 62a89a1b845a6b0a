// cluster-key-slot ships no types: its default export is Redis Cluster's slot of a key (CRC16 of its hash tag, mod 16384).
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string): number;
}
