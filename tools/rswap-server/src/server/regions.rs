// SPDX-License-Identifier: GPL-2.0

//! The life of a region: made for a new client (anonymous or a state file), restored
//! from the state directory at start, registered on its client's device, kept in its
//! file (`--state-dir`), kept for the grace period once its last queue is gone, and
//! freed when that is over (or kept on disk at shutdown).

use super::*;

/// Logs what did not take on a region's new mapping; the region is served anyway.
fn log_map_warnings(w: MapWarnings, client_id: u64, region_id: u64) {
    if let Some(e) = w.dont_dump {
        log::warn("region_dontdump_failed")
            .kv("client_id", client_id)
            .kv("region_id", region_id)
            .kv("errno", e.raw_os_error().unwrap_or(0))
            .kv("error", e)
            .kv(
                "effect",
                "the region's memory may appear in a core dump of the server",
            )
            .emit();
    }
    if let Some(e) = w.lock {
        log::warn("region_mlock_failed")
            .kv("client_id", client_id)
            .kv("region_id", region_id)
            .kv("error", e)
            .emit();
    }
}

/// Maps a region's memory file (`--state-dir`), locked unless `mlock` is false, and
/// excluded from core dumps; a lock or advice that fails is logged, not fatal (as
/// for the process's own memory).
/// Logs what gives access to `region` (its remote address and rkey) at debug level
/// only: whoever holds them, and reaches the server's fabric, can read and write it.
pub(super) fn log_access(client_id: u64, region_id: u64, region: &RemoteRegion) {
    log::debug("region_access")
        .kv("client_id", client_id)
        .kv("region_id", region_id)
        .hex("remote_addr", region.addr())
        .hex("rkey", region.rkey().into())
        .emit();
}

fn map_region_file(
    file: &std::fs::File,
    map_len: usize,
    mlock: bool,
    client_id: u64,
    region_id: u64,
) -> std::io::Result<RegionMemory> {
    let (mem, warnings) = RegionMemory::shared(file, map_len, mlock)?;
    log_map_warnings(warnings, client_id, region_id);
    Ok(mem)
}

/// Checks the state directory's file system against `--hugepages`,
/// `--state-dir-on-disk` and `--size`, and returns the allocation unit: a file on
/// hugetlbfs is made of its hugepages.
pub(super) fn state_dir_unit(store: &Store, cfg: &ServerConfig, unit: u64) -> Result<u64, String> {
    let (magic, block, blocks) = store.fs_type();
    let dir = store.dir().display();
    check_state_fs(magic, cfg, &dir.to_string())?;
    if let Some(bytes) = too_small(block, blocks, cfg.size) {
        log::warn("state_dir_small")
            .kv("dir", &dir)
            .kv("fs_size", format_size(bytes))
            .kv("pool", format_size(cfg.size))
            .kv(
                "effect",
                "new regions fail (NoMemory) once the file system is full; make it at least as large as the pool (mount -o remount,size=...)",
            )
            .emit();
    }
    match (magic == store::HUGETLBFS_MAGIC, cfg.hugepages) {
        (true, true) => return Ok(block.max(PAGE)),
        (true, false) => {
            return Err(format!(
                "--state-dir: {dir} is on hugetlbfs: add --hugepages"
            ))
        }
        (false, true) => {
            return Err(format!(
                "--hugepages with --state-dir needs the directory on hugetlbfs; {dir} is not"
            ))
        }
        (false, false) => {}
    }
    if !in_memory(magic) {
        log::warn("state_dir_on_disk")
            .kv("dir", &dir)
            .hex("fs_magic", magic)
            .kv("effect", DISK_EFFECT)
            .emit();
    }
    Ok(unit)
}

/// What a state directory on a disk file system means, for the log and the error.
const DISK_EFFECT: &str = "the kernel writes the regions' memory (clients' swapped pages, in plaintext unless a client encrypts) to that disk, where it stays in free blocks and backups after the regions are freed";

/// Whether a file system of `magic` keeps its files in memory.
fn in_memory(magic: u64) -> bool {
    [
        store::TMPFS_MAGIC,
        store::RAMFS_MAGIC,
        store::HUGETLBFS_MAGIC,
    ]
    .contains(&magic)
}

/// Refuses a state directory's file system (of `magic`) that is on a disk, unless
/// `--state-dir-on-disk`.
fn check_state_fs(magic: u64, cfg: &ServerConfig, dir: &str) -> Result<(), String> {
    if !in_memory(magic) && !cfg.state_dir_on_disk {
        return Err(format!(
            "--state-dir: {dir} is not on tmpfs or hugetlbfs (file system magic {magic:#x}): {DISK_EFFECT}; mount a tmpfs there (memory-server.md), or add --state-dir-on-disk to accept that"
        ));
    }
    Ok(())
}

/// The size in bytes of a file system of `blocks` blocks of `block` bytes (0: no limit)
/// if it cannot hold a pool of `pool` bytes.
fn too_small(block: u64, blocks: u64, pool: u64) -> Option<u64> {
    let bytes = blocks.saturating_mul(block);
    (blocks > 0 && bytes < pool).then_some(bytes)
}

/// Scans the state directory: deletes what is incomplete or inconsistent, maps
/// every complete region and starts its grace period. Returns the regions by
/// client id and the pool bytes they take.
pub(super) fn restore(
    store: &Store,
    cfg: &ServerConfig,
) -> Result<(BTreeMap<u64, Client>, u64), String> {
    let dir = store.dir().display();
    let verdicts = store
        .scan()
        .map_err(|e| format!("--state-dir: cannot read {dir}: {e}"))?;
    // Before anything is deleted: a region that could not be read is not known to be
    // bad, and a start without it would free it.
    if let Some(Verdict::Unreadable {
        region_id,
        name,
        why,
    }) = verdicts
        .iter()
        .find(|v| matches!(v, Verdict::Unreadable { .. }))
    {
        return Err(format!(
            "--state-dir: cannot read {dir}/{name} (region {region_id:016x}) after {} tries: {why}; its files are kept and nothing in {dir} was changed: fix the cause and start again",
            store::META_READ_TRIES
        ));
    }
    let mut clients = BTreeMap::new();
    let mut used: u64 = 0;
    let grace_until = Instant::now() + cfg.grace;
    for v in verdicts {
        match v {
            Verdict::Ignore { name, why } => {
                log::warn("state_file_ignored")
                    .kv("file", name)
                    .kv("why", why)
                    .emit();
            }
            Verdict::Discard {
                region_id,
                files,
                why,
            } => {
                let res = store.remove_files(&files);
                let mut line = log::warn("region_discarded")
                    .kv("region_id", region_id)
                    .kv("files", files.join(","))
                    .kv("why", why);
                if let Err(e) = res {
                    line = line.kv("error", e);
                }
                line.emit();
            }
            Verdict::Unreadable { .. } => {}
            Verdict::Restore(meta) => {
                let cannot = |e: &dyn std::fmt::Display| {
                    format!(
                        "--state-dir: cannot restore region {} of client {} in {dir}: {e}",
                        meta.region_id, meta.client_id
                    )
                };
                let file = store
                    .open_memory(meta.region_id, meta.map_length)
                    .map_err(|e| cannot(&e))?;
                let map_len = usize::try_from(meta.map_length).map_err(|e| cannot(&e))?;
                let mem =
                    map_region_file(&file, map_len, cfg.mlock, meta.client_id, meta.region_id)
                        .map_err(|e| cannot(&e))?;
                used = used.saturating_add(meta.map_length);
                log::info("region_restored")
                    .kv("client_id", meta.client_id)
                    .kv("region_id", meta.region_id)
                    .kv("length", meta.length)
                    .kv("epoch", meta.epoch)
                    .kv("instance", instance_text(meta.instance))
                    .kv("grace_s", cfg.grace.as_secs())
                    .kv("pool_left", cfg.size.saturating_sub(used))
                    .emit();
                clients.insert(
                    meta.client_id,
                    Client {
                        region_id: meta.region_id,
                        epoch: meta.epoch,
                        queue_count: meta.queue_count,
                        charge: meta.map_length,
                        length: meta.length,
                        queues: BTreeMap::new(),
                        grace_until: Some(grace_until),
                        reg: None,
                        mem,
                        owner: meta.instance,
                        last_seen: None,
                    },
                );
            }
        }
    }
    if used > cfg.size || clients.len() > cfg.max_clients {
        log::warn("pool_overcommitted")
            .kv("restored", clients.len())
            .kv("restored_bytes", used)
            .kv("pool", cfg.size)
            .kv("max_clients", cfg.max_clients)
            .kv(
                "effect",
                "new clients are refused until enough restored regions are freed",
            )
            .emit();
    }
    Ok((clients, used))
}

impl Server {
    /// A new region id: random, not 0, not one this server holds.
    fn new_region_id(&self) -> u64 {
        ids::pick_region_id(ids::random_u64, |id| {
            self.clients.values().any(|c| c.region_id == id)
        })
    }

    pub(super) fn new_client(
        &self,
        req: &ConnectRequest,
        instance: u64,
        device: &Device,
        length: u64,
        charge: u64,
    ) -> Result<Client, String> {
        let len = usize::try_from(length).map_err(|_| "size does not fit in memory".to_string())?;
        let map_len =
            usize::try_from(charge).map_err(|_| "size does not fit in memory".to_string())?;
        let pd = Pd::new(device).map_err(|e| format!("protection domain: {e}"))?;
        let failed = |e: &dyn std::fmt::Display| {
            log::error("region_alloc_failed")
                .kv("client_id", req.client_id)
                .kv("length", length)
                .kv("error", e)
                .emit();
            format!("region: {e}")
        };
        let (region_id, mem, region) = match &self.store {
            None => {
                let region_id = self.new_region_id();
                let (mem, warnings) = RegionMemory::anon(map_len.max(len), self.cfg.hugepages)
                    .map_err(|e| failed(&e))?;
                log_map_warnings(warnings, req.client_id, region_id);
                let region = RemoteRegion::new(&pd, &mem, len).map_err(|e| failed(&e))?;
                (region_id, mem, region)
            }
            Some(store) => {
                // O_EXCL: an id whose files are still on disk is never reused.
                let mut tries = 0;
                let (region_id, file) = loop {
                    let id = self.new_region_id();
                    match store.create_memory(id, charge) {
                        Ok(f) => break (id, f),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                            tries += 1;
                        }
                        Err(e) => return Err(failed(&format_args!("state dir: {e}"))),
                    }
                };
                let made = (|| {
                    let mem =
                        map_region_file(&file, map_len, self.cfg.mlock, req.client_id, region_id)?;
                    let region = RemoteRegion::new(&pd, &mem, len)?;
                    let meta = Meta {
                        client_id: req.client_id,
                        region_id,
                        length,
                        map_length: charge,
                        epoch: 1,
                        queue_count: req.queue_count,
                        instance: Some(instance),
                    };
                    store
                        .write_meta(&meta)
                        .map_err(|e| std::io::Error::new(e.kind(), format!("state dir: {e}")))?;
                    Ok::<_, std::io::Error>((mem, region))
                })();
                match made {
                    Ok((mem, region)) => (region_id, mem, region),
                    Err(e) => {
                        let _ = store.remove_region(region_id);
                        return Err(failed(&e));
                    }
                }
            }
        };
        Ok(Client {
            region_id,
            epoch: 1,
            queue_count: req.queue_count,
            charge,
            length,
            queues: BTreeMap::new(),
            grace_until: None,
            reg: Some(Registration {
                region,
                pd,
                device: device.clone(),
            }),
            mem,
            owner: Some(instance),
            last_seen: None,
        })
    }

    /// Registers a restored region on `device` (its first queue's) if it is not
    /// registered yet.
    pub(super) fn register_restored(
        &mut self,
        client_id: u64,
        device: &Device,
    ) -> Result<(), String> {
        let Some(c) = self.clients.get_mut(&client_id) else {
            return Ok(());
        };
        if c.reg.is_some() {
            return Ok(());
        }
        let len =
            usize::try_from(c.length).map_err(|_| "size does not fit in memory".to_string())?;
        let pd = Pd::new(device).map_err(|e| format!("protection domain: {e}"))?;
        let region = RemoteRegion::new(&pd, &c.mem, len).map_err(|e| {
            log::error("region_alloc_failed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("error", &e)
                .emit();
            format!("region: {e}")
        })?;
        log::info("region_registered")
            .kv("client_id", client_id)
            .kv("region_id", c.region_id)
            .kv("length", c.length)
            .kv("device", device.name())
            .emit();
        log_access(client_id, c.region_id, &region);
        c.reg = Some(Registration {
            region,
            pd,
            device: device.clone(),
        });
        Ok(())
    }

    /// Writes a client's metadata to the state directory (if there is one).
    pub(super) fn persist(&self, client_id: u64) {
        let (Some(store), Some(c)) = (&self.store, self.clients.get(&client_id)) else {
            return;
        };
        if let Err(e) = store.write_meta(&c.meta(client_id)) {
            log::error("state_write_failed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("error", e)
                .emit();
        }
    }

    /// Starts the grace period of a client that has no live queue (and none running).
    pub(super) fn grace_if_idle(&mut self, client_id: u64) {
        if self
            .clients
            .get(&client_id)
            .is_some_and(|c| c.queues.is_empty() && c.grace_until.is_none())
        {
            self.start_grace(client_id);
        }
    }

    fn start_grace(&mut self, client_id: u64) {
        let grace = self.cfg.grace;
        if let Some(c) = self.clients.get_mut(&client_id) {
            c.grace_until = Some(Instant::now() + grace);
            log::info("client_idle")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("epoch", c.epoch)
                .kv("grace_s", grace.as_secs())
                .emit();
        }
    }

    pub(super) fn expire(&mut self, now: Instant) {
        let due: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.grace_until.is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.free_client(id, "grace period over");
        }
    }

    pub(super) fn free_client(&mut self, client_id: u64, why: &str) {
        if let Some(c) = self.clients.remove(&client_id) {
            self.used = self.used.saturating_sub(c.charge);
            self.counters.regions_freed += 1;
            log::info("region_freed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("why", why)
                .kv("pool_left", self.remaining())
                .emit();
            let region_id = c.region_id;
            // Dropping deregisters the MR, unmaps the memory and frees the PD.
            drop(c);
            if let Some(store) = &self.store {
                if let Err(e) = store.remove_region(region_id) {
                    log::error("state_remove_failed")
                        .kv("client_id", client_id)
                        .kv("region_id", region_id)
                        .kv("error", e)
                        .emit();
                }
            }
        }
    }

    /// With `--state-dir`, at shutdown: releases the region in this process but
    /// keeps its files, for the next server.
    pub(super) fn keep_client(&mut self, client_id: u64, why: &str) {
        self.persist(client_id);
        if let Some(c) = self.clients.remove(&client_id) {
            self.used = self.used.saturating_sub(c.charge);
            log::info("region_kept")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("epoch", c.epoch)
                .kv("why", why)
                .emit();
            // Dropping deregisters the MR and unmaps the memory; the files stay.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &[&str]) -> ServerConfig {
        let args = ["--listen", "192.0.2.1", "--size", "64M", "--insecure"];
        let args = args.iter().chain(extra).map(|s| s.to_string());
        match config::parse_server_args(args) {
            Ok(config::Parsed::Run(c)) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_state_dir_is_in_memory() {
        const EXT4: u64 = 0xef53;
        let c = cfg(&["--state-dir", "/run/s"]);
        for magic in [
            store::TMPFS_MAGIC,
            store::RAMFS_MAGIC,
            store::HUGETLBFS_MAGIC,
        ] {
            assert_eq!(check_state_fs(magic, &c, "/run/s"), Ok(()));
        }
        // A disk: refused, naming what it means and the way out.
        let e = check_state_fs(EXT4, &c, "/run/s").expect_err("disk");
        assert!(
            e.contains("not on tmpfs or hugetlbfs (file system magic 0xef53)"),
            "{e}"
        );
        assert!(e.contains("plaintext"), "{e}");
        assert!(e.contains("--state-dir-on-disk"), "{e}");
        // Unless told so.
        let c = cfg(&["--state-dir", "/run/s", "--state-dir-on-disk"]);
        assert_eq!(check_state_fs(EXT4, &c, "/run/s"), Ok(()));
    }

    #[test]
    fn a_state_dir_smaller_than_the_pool() {
        let pool = 64 << 20;
        assert_eq!(too_small(4096, 16384, pool), None);
        assert_eq!(too_small(4096, 0, pool), None, "no limit");
        assert_eq!(too_small(2 << 20, 32, pool), None);
        assert_eq!(too_small(4096, 16383, pool), Some(pool - 4096));
        assert_eq!(too_small(2 << 20, 31, pool), Some(62 << 20));
    }
}
