//! Custodial session keys in the database: sealed, opened, rotated all or nothing.

use bursar_relayer::hosts;
use bursar_relayer::vault::{self, MasterKey, VaultError};

use super::*;

fn master(byte: u8) -> MasterKey {
    MasterKey::from_hex(&format!("{byte:02x}").repeat(32), "test").unwrap()
}

async fn session_keys_are_sealed_and_rotation_is_all_or_nothing(db: Db) {
    let store = db.store().await;
    let host = hosts::create(&store, "h", "sessions").await.unwrap();
    let (old, new) = (master(1), master(2));
    let a = vault::new_session_key(&store, &old, &host.id)
        .await
        .unwrap();
    let b = vault::new_session_key(&store, &old, &host.id)
        .await
        .unwrap();
    let addr = |k: &Key| format!("{:#x}", k.address());
    assert_eq!(
        vault::session_key(&store, &old, &addr(&a))
            .await
            .unwrap()
            .address(),
        a.address()
    );
    // The secret is not in the database in the clear.
    let row = store.session_key(&addr(&a)).await.unwrap().unwrap();
    assert_eq!(row.master_key_id, old.id());

    assert_eq!(vault::rotate(&store, &old, &new).await.unwrap(), 2);
    assert!(matches!(
        vault::session_key(&store, &old, &addr(&b)).await,
        Err(VaultError::Sealed { .. })
    ));
    assert_eq!(
        vault::session_key(&store, &new, &addr(&b))
            .await
            .unwrap()
            .address(),
        b.address()
    );

    // A key that does not open under the "old" key stops the rotation before any row changes.
    let stray = vault::new_session_key(&store, &master(3), &host.id)
        .await
        .unwrap();
    assert!(matches!(
        vault::rotate(&store, &new, &master(4)).await,
        Err(VaultError::Sealed { .. })
    ));
    assert!(vault::session_key(&store, &new, &addr(&a)).await.is_ok());
    assert!(vault::session_key(&store, &master(3), &addr(&stray))
        .await
        .is_ok());
    assert!(matches!(
        vault::session_key(&store, &new, "0x00").await,
        Err(VaultError::Unknown(_))
    ));
}

mod sqlite_db {
    #[tokio::test]
    async fn session_keys_are_sealed_and_rotation_is_all_or_nothing() {
        super::session_keys_are_sealed_and_rotation_is_all_or_nothing(super::sqlite()).await
    }
}

mod postgres_db {
    #[tokio::test]
    async fn session_keys_are_sealed_and_rotation_is_all_or_nothing() {
        super::session_keys_are_sealed_and_rotation_is_all_or_nothing(super::postgres().await).await
    }
}
