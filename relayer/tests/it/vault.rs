//! Custodial session keys and providers' signing secrets in the database: sealed, opened,
//! rotated all or nothing.

use bursar_relayer::engine::vault::{self, MasterKey, VaultError};
use bursar_relayer::hosts;

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
    // The relayer's own key for a purpose: made once, the same to every later ask (another
    // process's would find it), and another purpose has another.
    let own = vault::relayer_key(&store, &old, "purpose").await.unwrap();
    let again = vault::relayer_key(&store, &old, "purpose").await.unwrap();
    assert_eq!(own.address(), again.address());
    let other = vault::relayer_key(&store, &old, "another").await.unwrap();
    assert_ne!(own.address(), other.address());
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

    assert_eq!(vault::rotate(&store, &old, &new).await.unwrap(), 4);
    let rotated = vault::relayer_key(&store, &new, "purpose").await.unwrap();
    assert_eq!(
        rotated.address(),
        own.address(),
        "rotation keeps the key, sealed anew"
    );
    assert!(vault::relayer_key(&store, &old, "purpose").await.is_err());
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

/// A host's provider secrets: set from a file's text, sealed (not in the database in the
/// clear, bound to their host and provider), replaced, rotated with the master key; bad ones
/// refused by name.
async fn provider_secrets_are_sealed_per_host_and_provider(db: Db) {
    use bursar_relayer::providers::{self, Provider, SecretError};
    let store = db.store().await;
    let host = hosts::create(&store, "h", "sessions").await.unwrap();
    let (old, new) = (master(1), master(2));
    let id = providers::set_secret(&store, &old, "h", Provider::E2b, "e2b-s3cret\n")
        .await
        .unwrap();
    assert_eq!(id, host.id);
    let opened = providers::secret(&store, &old, &host.id, Provider::E2b).await;
    assert_eq!(opened.unwrap().as_deref(), Some(&b"e2b-s3cret"[..]));
    let sealed = store
        .provider_secret(&host.id, "e2b")
        .await
        .unwrap()
        .unwrap();
    assert!(!sealed.contains("e2b-s3cret"));
    assert!(!sealed.contains(&alloy_primitives::hex::encode("e2b-s3cret")));
    assert!(
        providers::secret(&store, &old, &host.id, Provider::Vercel)
            .await
            .unwrap()
            .is_none(),
        "one per provider"
    );
    // Sealed for its row: moved to another provider, it does not open.
    store
        .set_provider_secret(&host.id, "vercel", &sealed, &old.id(), 0)
        .await
        .unwrap();
    assert!(matches!(
        providers::secret(&store, &old, &host.id, Provider::Vercel).await,
        Err(SecretError::Vault(VaultError::Sealed { .. }))
    ));
    providers::set_secret(&store, &old, "h", Provider::Vercel, "v")
        .await
        .unwrap();
    let whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    providers::set_secret(&store, &old, "h", Provider::Daytona, whsec)
        .await
        .unwrap();
    // Set again: replaced.
    providers::set_secret(&store, &old, "h", Provider::E2b, "rotated")
        .await
        .unwrap();
    assert_eq!(vault::rotate(&store, &old, &new).await.unwrap(), 3);
    for (provider, secret) in [
        (Provider::E2b, "rotated"),
        (Provider::Vercel, "v"),
        (Provider::Daytona, whsec),
    ] {
        let opened = providers::secret(&store, &new, &host.id, provider).await;
        assert_eq!(opened.unwrap().as_deref(), Some(secret.as_bytes()));
    }
    for (provider, secret) in [
        (Provider::Daytona, "not-whsec"),
        (Provider::Daytona, "whsec_!!"),
        (Provider::E2b, " \n"),
    ] {
        assert!(matches!(
            providers::set_secret(&store, &new, "h", provider, secret).await,
            Err(SecretError::BadSecret { .. })
        ));
    }
    let long = "x".repeat(1025);
    assert!(matches!(
        providers::set_secret(&store, &new, "h", Provider::E2b, &long).await,
        Err(SecretError::BadSecret { .. })
    ));
    assert!(matches!(
        providers::set_secret(&store, &new, "nobody", Provider::E2b, "s").await,
        Err(SecretError::UnknownHost(_))
    ));
    assert!(matches!(
        "modal".parse::<Provider>(),
        Err(SecretError::UnknownProvider(_))
    ));
    assert_eq!("daytona".parse::<Provider>().unwrap(), Provider::Daytona);
}

mod sqlite_db {
    #[tokio::test]
    async fn session_keys_are_sealed_and_rotation_is_all_or_nothing() {
        super::session_keys_are_sealed_and_rotation_is_all_or_nothing(super::sqlite()).await
    }

    #[tokio::test]
    async fn provider_secrets_are_sealed_per_host_and_provider() {
        super::provider_secrets_are_sealed_per_host_and_provider(super::sqlite()).await
    }
}

mod postgres_db {
    #[tokio::test]
    async fn session_keys_are_sealed_and_rotation_is_all_or_nothing() {
        super::session_keys_are_sealed_and_rotation_is_all_or_nothing(super::postgres().await).await
    }

    #[tokio::test]
    async fn provider_secrets_are_sealed_per_host_and_provider() {
        super::provider_secrets_are_sealed_per_host_and_provider(super::postgres().await).await
    }
}
