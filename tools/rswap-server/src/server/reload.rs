// SPDX-License-Identifier: GPL-2.0

//! SIGHUP: the allow-list read again (`systemctl reload`). Clients added are admitted
//! from then on, a changed secret or address list applies from the next connect on (an
//! established queue stays), and a removed client's queues are closed, its region
//! freed after the grace period. A file that does not load is refused whole: the
//! allow-list in use stays, and the log says why with FILE:LINE. Nothing else changes.

use super::*;

/// `why=` of the queues of a client removed from the allow-list.
pub(super) const WHY_REMOVED: &str = "removed from the allow-list";

/// Client ids for the log: `1,2,0x..` in decimal, comma-separated; `none` for none.
fn id_list(ids: &[u64]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

impl Server {
    /// Reads the allow-list again (SIGHUP).
    pub(super) fn reload_allow_list(&mut self) {
        let Some(path) = self.cfg.allow_list.clone() else {
            log::warn("allow_list_not_reloaded")
                .kv("why", "no --allow-list: there is nothing to read again")
                .emit();
            return;
        };
        let new = match AllowList::load(&path) {
            Ok(a) => a,
            Err(e) => {
                log::error("allow_list_rejected")
                    .kv("error", e)
                    .kv(
                        "kept",
                        format!(
                            "the allow-list in use ({} clients)",
                            self.gate.allow().len()
                        ),
                    )
                    .emit();
                return;
            }
        };
        let changes = self.gate.allow().changes(&new);
        let clients = new.len();
        self.gate.set_allow(new);
        log::info("allow_list_reloaded")
            .kv("file", path.display())
            .kv("clients", clients)
            .kv("added", id_list(&changes.added))
            .kv("removed", id_list(&changes.removed))
            .kv("changed", id_list(&changes.changed))
            .emit();
        for client_id in changes.removed {
            let keys: Vec<IdKey> = self
                .clients
                .get(&client_id)
                .map(|c| c.queues.values().copied().collect())
                .unwrap_or_default();
            for key in keys {
                self.close_queue(key, WHY_REMOVED);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::id_list;

    #[test]
    fn id_lists() {
        assert_eq!(id_list(&[]), "none");
        assert_eq!(id_list(&[7]), "7");
        assert_eq!(id_list(&[1, 0x5502]), "1,21762");
    }
}
