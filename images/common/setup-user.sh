#!/bin/sh
# Creates the non-root user the job runs as ($USER_NAME, uid $USER_UID), in the
# GPU groups (video, render) when the base has them, and /workspace it owns.
# USER_NAME=root keeps the base's root user (e.g. for bases that need it).
set -eu
name=${USER_NAME:-primus}
uid=${USER_UID:-1000}
mkdir -p /workspace
if [ "$name" = root ]; then exit 0; fi
if ! id "$name" >/dev/null 2>&1; then
    if command -v useradd >/dev/null 2>&1; then
        if getent passwd "$uid" >/dev/null 2>&1; then
            useradd --create-home --shell /bin/sh "$name"   # the uid is taken (e.g. ubuntu): take the next free one
        else
            useradd --create-home --shell /bin/sh --uid "$uid" "$name"
        fi
    else  # a base without shadow utils: write the entries by hand
        echo "$name:x:$uid:$uid::/home/$name:/bin/sh" >>/etc/passwd
        echo "$name:x:$uid:" >>/etc/group
        mkdir -p "/home/$name" && chown "$uid:$uid" "/home/$name"
    fi
fi
for group in video render; do
    if getent group "$group" >/dev/null 2>&1 && command -v usermod >/dev/null 2>&1; then
        usermod -a -G "$group" "$name"
    fi
done
chown "$name" /workspace
