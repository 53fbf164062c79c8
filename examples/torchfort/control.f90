! A TorchFort program in Fortran (`use torchfort`, nothing of ktr's) that learns to control a simulation in situ:
! sixteen copies of a particle pushed by its action, x' = x + dt a, each step rewarded by -x'^2, steered by one TD3 agent in
! TorchFort's calling pattern (predict_explore, update_replay_buffer, is_ready, train_step), every environment's
! time step in one call through the (features, n_envs) form, as a solver hands over a field of control points.
! Then it saves a checkpoint, loads the networks into a second system and drives every copy from fixed starts with
! both. Fails unless the learnt control keeps the particles 10x nearer 0 than no control and the reloaded policy
! acts the same (FACTOR: 10 unless given; sanitizer builds run fewer episodes against a looser one).
!   control_f control.yaml CHECKPOINT_DIR [EPISODES (500)] [FACTOR (10)]
program control
  use torchfort
  implicit none
  integer, parameter :: n_envs = 16, horizon = 20
  real, parameter :: dt = 0.25
  real :: x(1, n_envs), x_new(1, n_envs), act(1, n_envs), reward(n_envs), final(n_envs)
  real :: p_loss, q_loss, controlled, free, diff, factor
  logical :: ready
  integer :: istat, episode, episodes, t, updates
  integer(kind(1_8)) :: seed
  character(len=256) :: config, dir, arg

  call get_command_argument(1, config)
  call get_command_argument(2, dir)
  episodes = 500
  call get_command_argument(3, arg)
  if (len_trim(arg) > 0) read (arg, *) episodes
  factor = 10
  call get_command_argument(4, arg)
  if (len_trim(arg) > 0) read (arg, *) factor
  seed = 12345
  istat = torchfort_rl_off_policy_create_system("control", config, TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1

  ! Training: episodes of `horizon` steps from random starts; the last step of each is terminal.
  updates = 0
  do episode = 1, episodes
    do t = 1, n_envs
      x(1, t) = 2 * uniform(seed) - 1
    end do
    do t = 1, horizon
      istat = torchfort_rl_off_policy_predict_explore("control", x, act)
      if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
      call advance(x, act, x_new, reward)
      final = merge(1., 0., t == horizon)
      istat = torchfort_rl_off_policy_update_replay_buffer("control", x, act, x_new, reward, final)
      if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
      istat = torchfort_rl_off_policy_is_ready("control", ready)
      if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
      if (ready) then
        istat = torchfort_rl_off_policy_train_step("control", p_loss, q_loss)
        if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
        updates = updates + 1
      end if
      x = x_new
    end do
  end do

  ! The networks alone into a second system (TorchFort's load_model), then both policies from fixed starts.
  istat = torchfort_rl_off_policy_save_checkpoint("control", dir)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  istat = torchfort_rl_off_policy_create_system("reloaded", config, TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  istat = torchfort_rl_off_policy_load_model("reloaded", dir)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  call drive(.true., controlled, diff)
  call drive(.false., free)
  print '(a, i0, a, i0, a, es9.2, a, es9.2, a, es9.2)', 'torchfort RL (Fortran): ', n_envs, ' environments, ', &
    updates, ' TD3 updates; mean |x| over the last 10 steps ', controlled, ' (no control: ', free, &
    '); the reloaded policy within ', diff
  if (controlled * factor >= free .or. diff > 1e-6) stop 1

contains

  ! One step of every copy: x' = clamp(x + dt a, -1, 1), reward -x'^2.
  subroutine advance(x, a, x_new, r)
    real, intent(in) :: x(:, :), a(:, :)
    real, intent(out) :: x_new(:, :), r(:)
    x_new = max(-1., min(1., x + dt * a))
    r = -x_new(1, :)**2
  end subroutine

  ! mean_abs: |x| averaged over the last half of an episode from evenly spread starts, with the trained policy
  ! (steer) or with no control; diff: the largest difference between the trained and the reloaded policy's actions.
  subroutine drive(steer, mean_abs, diff)
    logical, intent(in) :: steer
    real, intent(out) :: mean_abs
    real, intent(out), optional :: diff
    real :: s(1, n_envs), s_new(1, n_envs), a(1, n_envs), a2(1, n_envs), r(n_envs), gap
    integer :: i, k
    do i = 1, n_envs
      s(1, i) = -0.9 + 1.8 * (i - 1) / (n_envs - 1)
    end do
    a = 0; mean_abs = 0; gap = 0
    do k = 1, horizon
      if (steer) then
        istat = torchfort_rl_off_policy_predict("control", s, a)
        if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
        istat = torchfort_rl_off_policy_predict("reloaded", s, a2)
        if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
        gap = max(gap, maxval(abs(a - a2)))
      end if
      call advance(s, a, s_new, r)
      s = s_new
      if (k > horizon / 2) mean_abs = mean_abs + sum(abs(s)) / (n_envs * (horizon - horizon / 2))
    end do
    if (present(diff)) diff = gap
  end subroutine

  ! A uniform draw in (0, 1) from the minimal standard generator (Park and Miller's, multiplier 48271): the same
  ! episodes on every compiler, and no product beyond 2^47.
  real function uniform(state)
    integer(kind(1_8)), intent(inout) :: state
    state = mod(state * 48271_8, 2147483647_8)
    uniform = real(state) / 2147483647.
  end function
end program
